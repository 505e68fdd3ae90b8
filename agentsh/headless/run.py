"""``agentsh -p PROMPT``: one turn without a screen, printed as text, JSON or JSON lines.

A consumer of the agent's event stream, like the TUI. ``text`` prints the final answer on
stdout (progress and warnings go to stderr, so the answer can be piped); ``json`` prints one
object with the answer, session id, usage and cost; ``stream-json`` prints every event as one
JSON line and the same result object last. Approval mode ``ask`` cannot ask anyone here, so
tools that need approval are denied and the model is told why. The exit code is 0 on success,
1 on an error (with a one-line reason on stderr), 130 when interrupted. Ctrl+C (or SIGTERM) stops
the turn the way Esc does in the TUI: a running command is killed and its output so far goes
into the log, the partial reply is kept, and the result is still printed; a second Ctrl+C stops
at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from agentsh.config import ApprovalMode, load_environment
from agentsh.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    ErrorOccurred,
    Event,
    Notice,
    Retrying,
    TurnEnded,
    TurnOutcome,
    UsageReported,
    event_to_json,
)
from agentsh.headless.stdin import (
    FIRST_BYTE_WAIT_S,
    PROMPT_FROM_STDIN,
    StdinError,
    attach,
    read_stdin,
    terminal,
)
from agentsh.startup import SessionChoiceError, session_for_args

if TYPE_CHECKING:
    from agentsh.frontend import AgentAPI


@dataclass(slots=True)
class _Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    answer: str = ""
    outcome: TurnOutcome = TurnOutcome.ERROR
    error: str = ""
    limit: str = ""


def main(args: argparse.Namespace) -> int:
    prompt = resolve_prompt(args, sys.stdin, sys.stderr)
    if getattr(args, "resume", None) == "":
        # The TUI shows a picker for a bare -r; here nobody can pick, and starting a new
        # session instead would quietly drop the conversation the user asked for.
        raise CliError(
            "-r needs a session id with -p (`agentsh sessions` lists them; -c resumes the newest)"
        )
    env = load_environment()
    for problem in env.config.problems:
        print(f"agentsh: warning: {problem}", file=sys.stderr)
    cwd = Path.cwd()
    try:
        session = session_for_args(env, args, cwd)
    except SessionChoiceError as exc:
        raise CliError(str(exc)) from exc
    except LookupError as exc:  # unknown or ambiguous id prefix from the catalog
        raise CliError(str(exc.args[0] if exc.args else exc)) from exc
    for load_problem in session.problems:
        print(f"agentsh: warning: {session.path}: {load_problem}", file=sys.stderr)

    from agentsh.agent import build_agent  # heavy: imports litellm

    approval = ApprovalMode(args.approve) if args.approve else None
    agent: AgentAPI = build_agent(
        env,
        session,
        model=args.model,
        api_base=args.api_base,
        approval=approval,
        interactive=False,
        cwd=cwd,
        max_steps=max(1, args.max_turns),
        max_cost_usd=getattr(args, "max_budget_usd", None),
    )
    if agent.model is None:
        from agentsh.llm.models import NO_MODEL_HELP

        agent.close()
        raise CliError("no model is configured.\n\n" + NO_MODEL_HELP)
    try:
        totals = asyncio.run(_run(agent, prompt, args.output_format, sys.stdout, sys.stderr))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("agentsh: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        agent.close()
        from agentsh.memory.index import close_shared

        close_shared()
    if totals.limit:
        if args.output_format == "text":
            print(f"agentsh: {limit_message(totals.limit, args)}", file=sys.stderr)
        return EXIT_ERROR
    if totals.outcome is TurnOutcome.ERROR:
        if args.output_format == "text":
            print(f"agentsh: {totals.error or 'the turn failed'}", file=sys.stderr)
        return EXIT_ERROR
    if totals.outcome is TurnOutcome.ABORTED:
        print("agentsh: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def resolve_prompt(args: argparse.Namespace, stdin: TextIO, err: TextIO) -> str:
    """The prompt to run: from ``-p``/the words, from stdin, or both (see :mod:`.stdin`)."""
    implied = bool(getattr(args, "implied_print", False))
    given: str | None = args.prompt if args.prompt != PROMPT_FROM_STDIN else None
    piped_wanted = not terminal(stdin)
    if given is None:
        if not piped_wanted:
            if implied:
                raise CliError(
                    "stdout is not a terminal, and the interactive shell needs one; run a "
                    'prompt headless with agentsh -p "PROMPT" (or pipe the prompt in)',
                    EXIT_USAGE,
                )
            raise CliError("no prompt: give it after -p, or pipe it in", EXIT_USAGE)
        try:
            # Plain `agentsh` without a terminal only runs what is piped in: a stdin left
            # open and silent must not hang it. After -p, stdin is the prompt: wait for it.
            piped = read_stdin(wait_s=FIRST_BYTE_WAIT_S if implied else None, stream=stdin)
        except StdinError as exc:
            raise CliError(str(exc)) from exc
        if not piped or not piped.strip():
            if implied:
                what = "nothing" if piped is None else "no prompt"
                wait = f" in {FIRST_BYTE_WAIT_S:.0f}s" if piped is None else ""
                raise CliError(
                    f"no terminal, and {what} arrived on stdin{wait}; the interactive shell "
                    'needs a terminal; run a prompt headless with agentsh -p "PROMPT"',
                    EXIT_USAGE,
                )
            raise CliError("the prompt is empty")
        return piped.rstrip("\n")
    if not given.strip():
        raise CliError("the prompt is empty")
    if not piped_wanted:
        return given
    try:
        piped = read_stdin(wait_s=FIRST_BYTE_WAIT_S, stream=stdin)
    except StdinError as exc:
        raise CliError(str(exc)) from exc
    if piped is None:
        err.write(
            f"agentsh: warning: nothing arrived on stdin in {FIRST_BYTE_WAIT_S:.0f}s; going on "
            "without it (redirect stdin from /dev/null to skip the wait)\n"
        )
        err.flush()
        return given
    return attach(given, piped)


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


def _stop_on_signals(agent: AgentAPI) -> None:
    """Ctrl+C and SIGTERM cancel the turn through the agent, like Esc in the TUI.

    Left to asyncio, a Ctrl+C cancels the whole task: a command that was running is recorded
    as "not run" although it ran and may have changed files, and no result is printed. The
    agent's own cancel lets a running tool stop itself and report its partial output. A second
    signal, or one before the turn starts, cancels the task outright.
    """
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    signals = 0

    def stop() -> None:
        nonlocal signals
        signals += 1
        if signals == 1 and agent.busy:
            agent.cancel()
        elif main is not None:
            main.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop)
        except (NotImplementedError, RuntimeError, ValueError):
            return  # not the main thread, or a platform without loop signal handlers


async def _run(agent: AgentAPI, prompt: str, fmt: str, out: TextIO, err: TextIO) -> _Totals:
    totals = _Totals()
    _stop_on_signals(agent)
    async for event in agent.run(prompt):
        _account(event, totals)
        if fmt == "stream-json":
            out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
            out.flush()
        else:
            _progress(event, err)
    result = {
        "type": "result",
        "outcome": "error" if totals.limit else totals.outcome.value,
        "limit": totals.limit or None,
        "answer": totals.answer,
        "error": totals.error,
        "session_id": agent.session.id,
        "session_file": str(agent.session.path) if agent.session.path else None,
        "model": agent.model,
        "usage": {"input_tokens": totals.input_tokens, "output_tokens": totals.output_tokens},
        "cost": round(totals.cost, 6),
    }
    if fmt in ("json", "stream-json"):
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif totals.answer:
        out.write(totals.answer.rstrip("\n") + "\n")
    out.flush()
    return totals


def _account(event: Event, totals: _Totals) -> None:
    match event:
        case UsageReported():
            totals.input_tokens += event.input_tokens
            totals.output_tokens += event.output_tokens
            totals.cost += event.cost
        case TurnEnded():
            totals.outcome = event.outcome
            totals.answer = event.text
            totals.error = event.error or totals.error
            totals.limit = event.limit
        case ErrorOccurred():
            totals.error = event.message


def _progress(event: Event, err: TextIO) -> None:
    """What a person watching stderr wants to know while the answer is being made."""
    match event:
        case Retrying():
            err.write(
                f"agentsh: {event.reason}; retrying in {event.delay_s:.1f}s "
                f"(attempt {event.attempt}/{event.max_attempts})\n"
            )
        case Notice():
            err.write(f"agentsh: {event.level.value}: {event.text}\n")
        case CompactionFinished():
            note = f"; {event.note}" if event.note else ""
            err.write(
                f"agentsh: context compacted ({event.tier.label}): {event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens; archive {event.workspace_file}{note}\n"
            )
        case CompactionFailed():
            err.write(f"agentsh: warning: {event.tier.label} compaction failed: {event.reason}\n")
        case _:
            return
    err.flush()
