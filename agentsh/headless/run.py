"""``agentsh -p``: turns without a screen, for scripts, CI and Claude Code tooling.

A consumer of the agent's event stream, like the TUI; :mod:`.output` prints it in the chosen
format. With ``--input-format stream-json`` each user message read from stdin runs one turn
(:mod:`.stream_input`). Nobody can answer an approval here: a call that would ask is denied and
the model told why, unless a mode (``--approve``, ``--permission-mode``) or an allow rule
(``--allowedTools``, :mod:`agentsh.tools.rules`) lets it through. The exit code is 0 on
success, 1 on an error or a reached limit (with a one-line reason on stderr in text mode), 130
when interrupted. Ctrl+C (or SIGTERM) stops the turn the way Esc does in the TUI: a running
command is killed and its output so far goes into the log, the partial reply is kept, and the
result is still printed; a second Ctrl+C stops at once (:mod:`.ending`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.config import ApprovalMode, load_environment
from agentsh.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError
from agentsh.events import ApprovalRequest, AssistantMessage, ToolFinished, TurnOutcome
from agentsh.headless.claude_code import ClaudeCodeStream
from agentsh.headless.control import MCP_STATUS, Controls
from agentsh.headless.ending import Stopping
from agentsh.headless.output import Output
from agentsh.headless.permission_prompt import STDIO, StdioPermissions
from agentsh.headless.stdin import PROMPT_FROM_STDIN, resolve_prompt
from agentsh.headless.stream_input import (
    EOF,
    BadLine,
    ControlRequest,
    ControlResponse,
    LineReader,
    UserInput,
)
from agentsh.process_end import run_loop
from agentsh.session.entries import EntryAppended
from agentsh.startup import SessionChoiceError, session_for_args
from agentsh.tools.approval import PERMISSION_MODES
from agentsh.tools.base import params_json

if TYPE_CHECKING:
    from agentsh.frontend import HeadlessAPI
    from agentsh.run_options import RunExtras
    from agentsh.tools.rules import ToolRules

CLAUDE_CODE_MODES = {
    ApprovalMode.ASK: "default",
    ApprovalMode.EDITS: "acceptEdits",
    ApprovalMode.ALL: "bypassPermissions",
}


def main(args: argparse.Namespace) -> int:
    fmt = args.output_format
    streaming_in = getattr(args, "input_format", "text") == "stream-json"
    if streaming_in and fmt not in ("stream-json", "events"):
        raise CliError(
            "--input-format stream-json needs --output-format stream-json (or events)", EXIT_USAGE
        )
    prompt_tool = getattr(args, "permission_prompt_tool", None)
    if prompt_tool is not None and (prompt_tool != STDIO or not streaming_in):
        raise CliError(
            "agentsh takes --permission-prompt-tool stdio only, with --input-format "
            "stream-json (approvals asked of the program driving it, as the Claude Agent SDK "
            "does); an MCP tool as the prompt is not supported",
            EXIT_USAGE,
        )
    extras = _run_extras(args)
    if args.approve and getattr(args, "permission_mode", None):
        raise CliError("--approve and --permission-mode cannot be used together", EXIT_USAGE)
    if getattr(args, "resume", None) == "":
        # The TUI shows a picker for a bare -r; here nobody can pick, and starting a new
        # session instead would quietly drop the conversation the user asked for.
        raise CliError(
            "-r needs a session name or id with -p (`agentsh sessions` lists them; -c resumes "
            "the newest)"
        )
    rules = _rules(args)
    first: str | None = None
    if getattr(args, "prompt_read", False):
        first = args.prompt  # read from stdin by the command line already (agentsh.cli)
    elif not streaming_in or args.prompt not in (None, PROMPT_FROM_STDIN):
        first = resolve_prompt(args, sys.stdin, sys.stderr)
    env = load_environment(trust_project=bool(getattr(args, "trust_project", False)))
    if not env.trusted:
        # One line, and the run goes on without the folder's settings, instructions, memory.
        print(f"agentsh: {env.trust.notice()}", file=sys.stderr)
    for problem in env.config.problems:
        print(f"agentsh: warning: {problem}", file=sys.stderr)
    cwd = Path.cwd()
    notices: list[str] = []
    try:
        session = session_for_args(env, args, cwd, notices)
    except SessionChoiceError as exc:
        raise CliError(str(exc)) from exc
    except LookupError as exc:  # unknown or ambiguous id prefix from the catalog
        raise CliError(str(exc.args[0] if exc.args else exc)) from exc
    for notice in notices:  # -c with nothing to continue: the run goes on in a new session
        print(f"agentsh: warning: {notice}", file=sys.stderr)
    for load_problem in session.problems:
        print(f"agentsh: warning: {session.path}: {load_problem}", file=sys.stderr)
    from agentsh.llm import remote

    if remote.activate(env.settings.model.warm_worker_s):
        remote.prewarm()  # litellm loads in the model worker while the agent is built here

    from agentsh.agent_assembly import build_agent

    permission = getattr(args, "permission_mode", None)
    approval = PERMISSION_MODES.get(permission or "")
    if args.approve:
        approval = ApprovalMode(args.approve)
    agent: HeadlessAPI = build_agent(
        env,
        session,
        model=args.model,
        api_base=args.api_base,
        approval=approval,
        interactive=prompt_tool is not None,  # the SDK host answers (can_use_tool)
        cwd=cwd,
        max_steps=max(1, args.max_turns),
        max_cost_usd=getattr(args, "max_budget_usd", None),
        rules=rules,
        plan=permission == "plan",
        appended_prompt=extras.appended(getattr(args, "append_system_prompt", None) or ""),
        system_prompt=getattr(args, "system_prompt", None) or "",
        added_dirs=extras.added_dirs,
        mcp_servers=extras.mcp_servers,
        strict_mcp=extras.strict_mcp,
        fallback_model=extras.fallback_model,
    )
    if agent.model is None:
        from agentsh.llm.models import no_model_help

        agent.close()
        raise CliError("no model is configured.\n\n" + no_model_help(env.user.config_file))
    overview = agent.mcp_overview()
    servers = {s.name for s in overview.servers} | set(overview.untrusted)
    for rule in (*rules.allow, *rules.deny):
        if not any(rule.covers(name) for name in _known_tools(agent)) and "mcp__" not in rule.text:
            print(
                f"agentsh: warning: the rule {rule.text!r} names no tool agentsh has",
                file=sys.stderr,
            )
        elif unknown := _unknown_server(rule.tools, servers):
            print(
                f"agentsh: warning: the rule {rule.text!r} names no configured MCP server "
                f"{unknown!r} (rules name a server as configured, e.g. mcp__my.server__*)",
                file=sys.stderr,
            )
    stream = ClaudeCodeStream(
        agent.session.id, agent.model or "", partial=bool(getattr(args, "partial", False))
    )
    output = Output(fmt, stream, sys.stdout, sys.stderr, verbose=bool(args.verbose))
    mode = permission or CLAUDE_CODE_MODES[approval or ApprovalMode(env.settings.tools.approval)]
    output.begin(_init_line(stream, agent, cwd, mode))

    def interrupt() -> None:
        """Stop the turn (Ctrl+C, a signal, the host's interrupt), noting what ran for the
        result's ``terminal_reason``."""
        stream.note_interrupt()
        agent.cancel()

    stopping = Stopping(agent, interrupt, abort=output.abort)
    try:
        asks = None
        if prompt_tool is not None:
            from agentsh.headless.permission_updates import PermissionUpdates

            updates = PermissionUpdates(
                agent,
                cwd,
                env.project.root,
                bypass_allowed=not getattr(args, "_bypass_disabled", False),
            )
            asks = StdioPermissions(output.write, interrupt, _warn, updates)
        code = run_loop(
            _drive(agent, output, first, streaming_in, args, asks, stopping),
            wait_for_threads=lambda: not stopping.signalled,
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        output.abort()  # the turn that was running still gets its result
        print("agentsh: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    finally:
        try:
            agent.close()
            from agentsh.memory.index_registry import close_shared

            close_shared()
        finally:
            stopping.done()
    return code


def _warn(text: str) -> None:
    print(f"agentsh: warning: {text}", file=sys.stderr)


def _run_extras(args: argparse.Namespace) -> RunExtras:
    """The Claude Code flags of :mod:`agentsh.run_options`, read before anything else (the
    ``--settings`` env is set before the environment is read); their warnings on stderr."""
    from agentsh.run_options import apply_environment, resolve

    extras = resolve(args, Path.cwd(), headless=True)
    apply_environment(extras)
    for warning in extras.warnings:
        print(f"agentsh: warning: {warning}", file=sys.stderr)
    return extras


def _rules(args: argparse.Namespace) -> ToolRules:
    from agentsh.tools.rules import RuleError, ToolRules

    try:
        return ToolRules.parse(
            getattr(args, "allowed_tools", None) or (),
            getattr(args, "disallowed_tools", None) or (),
        )
    except RuleError as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc


def _unknown_server(patterns: tuple[str, ...], servers: set[str]) -> str:
    """The server an ``mcp__`` rule names (no glob) that is not configured; ""."""
    for pattern in patterns:
        head = pattern.removeprefix("mcp__").partition("__")[0]
        if pattern.startswith("mcp__") and not set("*?[") & set(head) and head not in servers:
            return head
    return ""


def _known_tools(agent: HeadlessAPI) -> list[str]:
    from agentsh.tools.rules import CLAUDE_CODE_NAMES

    names = agent.tool_names()
    return [*names, *(n for group in CLAUDE_CODE_NAMES.values() for n in group)]


def _init_line(
    stream: ClaudeCodeStream, agent: HeadlessAPI, cwd: Path, mode: str
) -> dict[str, Any]:
    from agentsh import __version__

    # As Claude Code does, the MCP servers are given their start first: their tools are in the
    # list, and each server's status is reported.
    agent.settle_mcp()
    servers = [
        {"name": s.name, "status": MCP_STATUS.get(s.state.value, s.state.value)}
        for s in agent.mcp_overview().servers
    ]
    return stream.init(
        cwd=str(cwd),
        tools=agent.tool_names(),
        permission_mode=mode,
        version=__version__,
        mcp_servers=servers,
    )


async def _drive(
    agent: HeadlessAPI,
    output: Output,
    first: str | None,
    streaming_in: bool,
    args: argparse.Namespace,
    asks: StdioPermissions | None = None,
    stopping: Stopping | None = None,
) -> int:
    """Run the first prompt, then (stream-json input) one turn per message; the exit code.
    ``stopping`` takes the signals (:mod:`.ending`)."""
    stopping = stopping or Stopping(agent)
    stopping.install()
    codes: list[int] = []
    if streaming_in:  # stdin is read from the first turn on: it may carry approvals
        codes += await _read_turns(agent, output, args, first, asks, stopping)
    elif first is not None:
        codes.append(await _turn(agent, output, first, args))
    if not codes:
        raise CliError("no user message arrived on stdin", EXIT_USAGE)
    if EXIT_INTERRUPTED in codes:
        return EXIT_INTERRUPTED
    return EXIT_ERROR if EXIT_ERROR in codes else EXIT_OK


async def _read_turns(
    agent: HeadlessAPI,
    output: Output,
    args: argparse.Namespace,
    first: str | None,
    asks: StdioPermissions | None,
    stopping: Stopping,
) -> list[int]:
    """Turns for ``first`` and the user messages on stdin, in order; control requests
    answered at once (an interrupt while a turn runs stops it), answers to approval questions
    handed to ``asks``."""
    reader = LineReader(sys.stdin.buffer)
    controls = Controls(
        agent, stopping.interrupt, bypass_allowed=not getattr(args, "_bypass_disabled", False)
    )
    waiting: deque[UserInput] = deque([UserInput(first)] if first is not None else [])
    codes: list[int] = []
    ended = False

    def take(item: object) -> None:
        nonlocal ended
        if item is EOF:
            ended = True
            if asks is not None:  # nobody is left to answer an approval
                asks.host_gone()
        elif isinstance(item, UserInput):
            waiting.append(item)
        elif isinstance(item, ControlRequest):
            output.write(controls.answer(item))
        elif isinstance(item, ControlResponse):
            if asks is None or not asks.answer(item):
                print(
                    f"agentsh: warning: stdin: an answer to no question ({item.request_id})",
                    file=sys.stderr,
                )
        elif isinstance(item, BadLine):
            print(f"agentsh: warning: stdin: {item.problem}", file=sys.stderr)

    while not stopping.signals:  # a signal ends the run once the turn it stopped is over
        while not waiting and not ended:
            take(await reader.get())
        if not waiting:
            return codes
        message = waiting.popleft()
        if message.skipped:
            kinds = ", ".join(sorted(set(message.skipped)))
            print(
                f"agentsh: warning: stdin: {kinds} content is not supported; sent the text",
                file=sys.stderr,
            )
        controls.before_turn()
        turn = asyncio.ensure_future(_turn(agent, output, message.text, args, asks))
        while not turn.done():
            getter = asyncio.ensure_future(reader.get())
            await asyncio.wait({turn, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                take(getter.result())
            else:
                getter.cancel()
        codes.append(turn.result())
    return codes


async def _turn(
    agent: HeadlessAPI,
    output: Output,
    prompt: str,
    args: argparse.Namespace,
    asks: StdioPermissions | None = None,
) -> int:
    output.start_turn()
    denied_before = told = len(agent.denials())
    async for event in agent.run(prompt):
        if isinstance(event, EntryAppended):
            continue  # the log's own lines; these outputs report the turn's progress instead
        output.event(event)
        if asks is not None and isinstance(event, AssistantMessage):
            asks.note(event)
        elif asks is not None and isinstance(event, ApprovalRequest):
            asks.ask(event)  # the host's control_response resolves it (see _read_turns)
        if isinstance(event, ToolFinished):  # the model is told of a refusal; so is the user
            for denial in agent.denials()[told:]:
                output.denied(denial.summary or denial.tool, denial.why)
            told = len(agent.denials())
    denials = [
        {"tool_name": d.tool, "tool_use_id": d.call_id, "tool_input": params_json(d.params)}
        for d in agent.denials()[denied_before:]
    ]
    if asks is not None:  # refused by the host (can_use_tool)
        denials += asks.denied
        asks.denied = []
    output.end_turn(denials)
    totals = output.totals
    text = output.fmt == "text"
    if totals.limit:
        if text:
            print(f"agentsh: {limit_message(totals.limit, args)}", file=sys.stderr)
        return EXIT_ERROR
    if totals.outcome is TurnOutcome.ERROR:
        if text:
            reason = totals.errors[-1] if totals.errors else "the turn failed"
            print(f"agentsh: {reason}", file=sys.stderr)
        return EXIT_ERROR
    if totals.outcome is TurnOutcome.ABORTED:
        print("agentsh: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def limit_message(limit: str, args: argparse.Namespace) -> str:
    if limit == "max_budget_usd":
        return (
            f"stopped: the budget of ${args.max_budget_usd} (--max-budget-usd) is spent; "
            "continue with -c to go on"
        )
    return (
        f"stopped after {args.max_turns} model calls (--max-turns) before the model was done; "
        "continue with -c to go on"
    )
