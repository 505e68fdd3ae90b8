"""``agentsh`` with no subcommand: start the TUI, importing only what the first frame needs.

The CLI dispatches here with its argparse namespace. This reads the configuration (stdlib
tomllib), prepares the process for litellm and tiktoken without importing them, and runs the
App; the session is opened and the agent built in a worker thread after the first frame, its
model calls made by the model worker process (:mod:`agentsh.llm.remote`, imported and switched
on in that thread: the model client's modules are not needed to draw). A folder that is not
trusted yet (:mod:`agentsh.trust`) is asked about first, in a small app of its own.
:func:`leave` ends the process once the App has finished.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
from typing import TYPE_CHECKING

# Ends the process once the App has finished. By then the App has restored the terminal and
# synced and closed the session, and the agent its MCP servers: the exit handlers still run
# (the model worker is ended, logging flushed); what is skipped is joining leftover threads (a
# quit while the agent loads must not wait for the load) and freeing every object one by one,
# which took 1-1.6 s on a loaded machine after everything was saved.
from agentsh.process_end import leave as leave

if TYPE_CHECKING:
    from agentsh.config import Environment
    from agentsh.frontend import InteractiveAPI
    from agentsh.session.session import Session
    from agentsh.tui.options import LaunchOptions


def main(args: argparse.Namespace) -> int:
    from agentsh.tui.quiet_gc import end_start_up, hold_for_start_up

    hold_for_start_up()  # until the first frame: the collector has little to find in it
    try:
        return _run(args)
    finally:
        end_start_up()  # where no first frame came (a declined trust question, an error)


def _run(args: argparse.Namespace) -> int:
    import dataclasses
    from pathlib import Path

    from agentsh.config import load_environment
    from agentsh.errors import CliError
    from agentsh.llm.env import prepare_environment
    from agentsh.run_options import apply_environment, resolve
    from agentsh.tui.app import AgentshApp
    from agentsh.tui.options import LaunchOptions

    try:
        extras = resolve(args, Path.cwd(), headless=False)  # --settings, --add-dir, ...
    except CliError as exc:
        print(f"agentsh: {exc}", file=sys.stderr)
        return exc.code
    apply_environment(extras)
    try:
        options = LaunchOptions.from_args(args, extras)
        if options.allowed_tools or options.disallowed_tools:
            options.tool_rules()  # a malformed rule: one line, before any frame
    except ValueError as exc:
        print(f"agentsh: {exc}", file=sys.stderr)
        return 2
    prepare_environment()
    env = load_environment(trust_project=bool(getattr(args, "trust_project", False)))
    if env.trust.asks and not env.trust_project:
        # Asked before the main app exists, so nothing of the folder's is loaded until then.
        from agentsh.trust import decline, grant
        from agentsh.tui.screens.trust_screen import ask_trust

        typed: list[str] = []  # keys typed before the question could be answered
        answer = ask_trust(env.trust, typed)
        if answer is None:
            return 0
        (grant if answer else decline)(env.user, env.trust)  # "not now" is remembered too
        env = load_environment()
        if typed:  # the start of the first message, in the editor
            options = dataclasses.replace(options, typed_ahead="".join(typed))
    app = AgentshApp(
        env,
        options,
        agent_factory=worker_agent,
        leaving=stop_model_worker,
        start_worker=functools.partial(start_model_worker, env, options),
    )
    app.run()
    return app.return_code or 0


def worker_agent(env: Environment, session: Session, options: LaunchOptions) -> InteractiveAPI:
    """The real agent, its model calls made by the model worker: litellm never loads in the UI
    process. Called in the load thread, so the model client's modules load there too."""
    from agentsh.llm import remote
    from agentsh.tui.lifecycle import build_real_agent

    # Before the agent is built: it picks its client by this.
    remote.activate(env.settings.model.warm_worker_s)
    return build_real_agent(env, session, options)


# An early start (the first key, while the agent loads) and the quit hook take turns: a worker
# started by one that runs after the quit hook would be left to the exit handler.
_worker_lock = threading.Lock()
_leaving = False


def start_model_worker(env: Environment, options: LaunchOptions) -> None:
    """At the first key while the agent still loads (in a thread of its own): start the model
    worker now, so its litellm import runs beside the load, not after it. Only when a model is
    configured (named, or a provider's key set: the Ollama probe is the load's to make), and
    never once the App is quitting."""
    from agentsh.llm import remote
    from agentsh.llm.models import choose_model

    configured = choose_model(
        env.settings.model, os.environ, cli_model=options.model, probe_ollama=_no_probe
    )
    if configured is None:
        return
    with _worker_lock:
        if not _leaving and remote.activate(env.settings.model.warm_worker_s):
            remote.prewarm()


def _no_probe(_url: str, _timeout: float) -> str | None:
    return None


def stop_model_worker() -> None:
    """Let the model worker begin to exit as the App quits (the App exits beside it), if the
    load thread or the first key got as far as loading it; none runs otherwise, and none
    starts after this."""
    global _leaving
    with _worker_lock:
        _leaving = True
        remote = sys.modules.get("agentsh.llm.remote")
        stop = getattr(remote, "stop_shared_worker", None)  # None while the thread imports it
        if stop is not None:
            stop()


def review_trust(args: argparse.Namespace) -> int:
    """``agentsh trust``: the trust question for this folder, asked even after a "not now"."""
    from agentsh.config import load_environment
    from agentsh.trust import decline, forget_decline, grant, revoke
    from agentsh.tui.screens.trust_screen import ask_trust

    env = load_environment()
    forget_decline(env.user, env.trust.root)
    check = load_environment().trust
    if not check.findings:
        print(f"{check.root} holds nothing to trust: agentsh loads nothing of it.")
        return 0
    answer = ask_trust(check)
    if answer is None:
        return 0
    if not answer:
        revoke(env.user, check.root)  # a "no" here takes back an earlier "yes" too
    (grant if answer else decline)(env.user, check)
    print(f"{check.root}: {'trusted' if answer else 'not trusted (not asked again at start)'}.")
    return 0
