"""``agentsh context ID`` (where the tokens of a session's context go) and ``agentsh compact ID``.

``context`` opens the session read-only (no lock, nothing written) and prints, for its current
leaf, the tokens of each part (system prompt, tool schemas, memory, summary, messages, tool
results), the figure the status bar shows (anchored on the provider's last reported usage when
there is one), the tier, and what compacting at each tier would keep and free right now.
``compact`` takes the session's lock and runs one manual compaction through the same engine
the agent uses; a Summarize needs a model (the session's, or ``-m``, or the configured
``summary_model``); without one it archives the turns instead and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentsh.config import Environment, load_environment, model_url
from agentsh.context.breakdown import ContextBreakdown
from agentsh.context.engine_protocol import SummaryReply
from agentsh.context.manager import ContextManager
from agentsh.context.tiers import parse_tier
from agentsh.errors import EXIT_OK, CliError
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    Event,
    Notice,
    Tier,
    UsageReported,
)
from agentsh.session.catalog import Catalog
from agentsh.session.entries import MessageEntry, ModelChangeEntry
from agentsh.session.log import SessionError, SessionLocked
from agentsh.session.session import Session

NO_MODEL = (
    "no model is configured to write a summary (set AGENTSH_MODEL, pass -m MODEL, or set "
    "[model] name in config.toml)"
)


# -- finding and opening the session -------------------------------------------------------------


def find_session_file(env: Environment, prefix: str) -> Path:
    """The session file whose id starts with ``prefix`` (this project first, then all)."""
    prefix = prefix.strip()
    if not prefix:
        raise CliError("give a session id (or a unique prefix of one)")
    try:
        return Path(Catalog(env.user).find(prefix, env.project.root).path)
    except (LookupError, ValueError, SessionError) as exc:
        raise CliError(str(exc)) from exc


def _open(path: Path, *, lock: bool) -> Session:
    try:
        return Session.open(path, lock=lock)
    except SessionLocked as exc:
        raise CliError(f"{exc} Close it there first.") from exc
    except (SessionError, OSError) as exc:
        raise CliError(f"cannot open {path}: {exc}") from exc


def _session_model(session: Session) -> str:
    """The model the session last used, as its log records it; "" when none is recorded or
    the recorded one names a server itself (``oobabooga/http://...``): a log may come from
    elsewhere (``sessions import`` of someone's Pi file), and only the user's own config,
    environment or command line may send the conversation to a server."""
    for entry in reversed(session.current_path()):
        model = ""
        if isinstance(entry, ModelChangeEntry):
            model = entry.model
        elif isinstance(entry, MessageEntry):
            model = entry.model or ""
        if model:
            return "" if model_url(model) else model
    return ""


def _model_for(env: Environment, session: Session, args: argparse.Namespace) -> tuple[str, str]:
    """(model, api base) for this session: -m, else the session's own, else the configured."""
    api_base = getattr(args, "api_base", None) or ""
    model = getattr(args, "model", None) or _session_model(session)
    if model:
        base = api_base or os.environ.get("AGENTSH_API_BASE") or env.settings.model.api_base
        return model, base
    from agentsh.llm.models import choose_model

    choice = choose_model(env.settings.model, os.environ, cli_api_base=api_base or None)
    if choice is None:
        return "", ""
    return choice.model, choice.api_base or ""


def _window(env: Environment, model: str) -> int:
    if env.settings.model.window:
        return env.settings.model.window
    from agentsh.llm.models import DEFAULT_WINDOW, model_info

    return model_info(model, env.settings.model).window if model else DEFAULT_WINDOW


def _counter(model: str) -> Any:
    from agentsh.llm.tokens import TokenCounter

    return TokenCounter(model or "gpt-4o").count


def _prompt_parts(
    env: Environment, session: Session, window: int = 0
) -> tuple[str, list[dict[str, Any]], str]:
    """(system prompt, tool schemas, memory part) as the agent would build them now; MCP
    servers' tools as they last listed them (nothing is started for a count)."""
    # Loaded only for this command: the agent's side of the layers.
    from agentsh.mcp.cache import CachedTools
    from agentsh.mcp.servers_config import load_mcp_config
    from agentsh.mcp.tools import McpToolSource
    from agentsh.memory.curated import CuratedMemory
    from agentsh.system_prompt import SystemPrompt
    from agentsh.tools.base import ToolRegistry
    from agentsh.tools.builtin import session_tools
    from agentsh.tools.memory import MemoryTool

    cwd = Path(session.header.cwd or ".")
    memory = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=env.trusted)
    prompt = SystemPrompt(env, cwd, memory=memory, window=window)
    # The same tool list as the agent (no index is opened: only the schemas are counted).
    registry = ToolRegistry(session_tools(MemoryTool(memory, env.settings.memory)))
    registry.terse = prompt.budget.terse
    specs = load_mcp_config(env.user, env.project).servers(trusted=False)
    if specs and window:
        cached = CachedTools(specs, env.user.mcp_tools_cache)
        registry.add_source(
            McpToolSource(cached, env.settings, window=lambda: window, terse=lambda: registry.terse)
        )
    return prompt.render(), registry.schemas(), prompt.memory_block()


def _manager(
    env: Environment, session: Session, model: str, api_base: str, emit: Any = None
) -> ContextManager:
    settings = env.settings
    summary_model = settings.model.summary_model or model

    async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> SummaryReply:
        if not summary_model:
            raise RuntimeError(NO_MODEL)
        from agentsh.llm.client import LLMClient

        # The session model's client, asked for the summary model: a summary model of another
        # provider goes to that provider's server, never to this one's (api_base), as in the
        # agent; a client of its own sent the conversation and its key to this one's.
        client = LLMClient(
            model or summary_model, settings=settings.model, api_base=api_base or None
        )
        completion = await client.complete(messages, max_tokens=max_tokens, model=summary_model)
        return SummaryReply.of(completion)  # counted in the session; cut off: refused

    return ContextManager(
        session,
        settings,
        env.user,
        model=model,
        window=_window(env, model),
        summarize=summarize,
        count_tokens=_counter(model),
        emit=emit or (lambda _event: None),
    )


# -- agentsh context ----------------------------------------------------------------------------


def show_context(args: argparse.Namespace) -> int:
    env = load_environment()
    session = _open(find_session_file(env, args.id), lock=False)
    model, api_base = _model_for(env, session, args)
    manager = _manager(env, session, model, api_base)
    system, tools, memory = _prompt_parts(env, session, manager.window)
    breakdown = manager.breakdown(system, tools, memory)
    if getattr(args, "json", False):
        data = breakdown.to_json() | {"session": session.id, "leaf": session.leaf_id}
        print(json.dumps(data, indent=2))
    else:
        print(render_breakdown(breakdown, session))
    return EXIT_OK


def render_breakdown(b: ContextBreakdown, session: Session, note: str = "") -> str:
    used = f"{b.used:,} / {b.window:,} tokens ({b.pct:.1f} %)"
    how = "estimated" if b.estimated else "anchored on the provider's last reported usage"
    lines = [
        f"Session {session.id} at entry {session.leaf_id or '(empty)'}",
        f"Model {b.model or '(none configured)'}, window {b.window:,} tokens, engine {b.engine}",
        f"Context: {used}, {how}",
        f"Tier: {b.tier.label or 'none'}",
        "",
    ]
    parts: Sequence[tuple[str, int]] = (
        ("system prompt", b.system),
        ("tool schemas", b.tools),
        *((("  of which MCP", b.mcp_tools),) if b.mcp_tools else ()),
        ("memory", b.memory),
        ("summary", b.summary),
        ("messages", b.messages),
        ("tool results", b.tool_results),
    )
    for label, tokens in parts:
        lines.append(f"  {label:<16}{tokens:>10,}")
    lines.append(f"  {'total (estimate)':<16}{b.estimated_total:>10,}")
    if note:
        lines.append(f"  ({note})")
    lines.append("")
    lines.append(
        f"{_count(b.entries, 'entry', 'entries')} in {_count(b.turns, 'turn')}; "
        f"{_count(b.compactions, 'compaction')} on this path."
    )
    if b.paused:
        lines.append(
            "Automatic compaction is paused (anti-thrashing); `agentsh compact` resumes it."
        )
    if b.problem:
        lines.append(f"Problem: {b.problem}")
    lines.append("")
    lines.append("Compacting now would:")
    for p in b.previews:
        if p.prune_only:
            what = f"prune tool output only, freeing ~{p.frees_tokens:,} tokens ({p.note})"
        else:
            what = (
                f"keep {p.kept_entries} entries ({p.kept_tokens:,} tokens), move "
                f"{p.removed_entries} out, freeing ~{p.frees_tokens:,} tokens"
            )
            if p.note:
                what += f"; {p.note}"
        lines.append(f"  {p.tier.label:<16}(last {p.keep_turns} turns) {what}")
    return "\n".join(lines)


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


# -- agentsh compact ----------------------------------------------------------------------------


def compact_session(args: argparse.Namespace) -> int:
    env = load_environment()
    try:
        tier: Tier | None = parse_tier(args.tier) if args.tier else None
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    session = _open(find_session_file(env, args.id), lock=True)
    events: list[Event] = []
    try:
        model, api_base = _model_for(env, session, args)
        manager = _manager(env, session, model, api_base, emit=events.append)
        system, tools, _memory = _prompt_parts(env, session, manager.window)
        manager.note_prompt(system, tools)
        instructions = getattr(args, "instructions", None) or ""
        entry = asyncio.run(manager.compact(tier, manual=True, instructions=instructions))
    finally:
        session.close()
    if getattr(args, "json", False):
        return _print_compaction_json(session.id, events, entry is None)
    spent = [e for e in events if isinstance(e, UsageReported)] if entry is None else []
    for event in events:
        match event:
            case Notice():
                print(f"agentsh: {event.text}")
            case CompactionFailed() if entry is None:
                counted = (
                    f"; its summary call ({spent[0].input_tokens:,} tokens in, "
                    f"{spent[0].output_tokens:,} out) counts in the session's totals"
                    if spent
                    else ""
                )
                raise CliError(f"nothing was compacted: {event.reason}{counted}")
            case CompactionFinished():
                saved = event.tokens_before - event.tokens_after
                print(
                    f"Compacted session {session.id} ({event.tier.label}): "
                    f"{event.tokens_before:,} -> {event.tokens_after:,} tokens "
                    f"({saved:,} freed)."
                )
                if event.summary_file:
                    print(f"Summary file: {event.summary_file}")
                if event.archive_file:
                    print(f"Archive file (the turns verbatim): {event.archive_file}")
                if event.note:
                    print(f"Note: {event.note}")
    return EXIT_OK


def _print_compaction_json(session_id: str, events: list[Event], failed: bool) -> int:
    """``compact --json``: one object with what the compaction did and what it said."""
    data: dict[str, Any] = {"session": session_id, "compacted": False, "notices": []}
    for event in events:
        match event:
            case Notice():
                data["notices"].append(event.text)
            case CompactionFailed() if failed:
                raise CliError(f"nothing was compacted: {event.reason}")
            case CompactionFinished():
                data |= {
                    "compacted": True,
                    "entry": event.entry_id,
                    "tier": event.tier.value,
                    "tokens_before": event.tokens_before,
                    "tokens_after": event.tokens_after,
                    "workspace_file": event.workspace_file or None,
                    "archive_file": event.archive_file or None,
                    "summary_file": event.summary_file or None,
                    "note": event.note,
                }
    print(json.dumps(data, indent=2))
    return EXIT_OK
