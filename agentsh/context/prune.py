"""Phase 1 of compaction: shrink tool traffic without a model call.

Three rules, all reversible because the log keeps the originals (a compaction records only
``entry id -> shortened text``):

- of identical tool outputs (>= ``prune_dedupe_min_chars``), the newest stays and each older
  copy becomes a note pointing at it;
- a tool output older than the kept turns (> ``prune_old_output_min_chars``) becomes one line
  saying what ran and how it ended, e.g. ``[bash] ran `pytest -q` -> exit 1, 214 lines``; an
  error stays visibly an error (a stub that reads as a success misleads the model);
- in tool calls older than the kept turns, whose arguments are over
  ``prune_arg_container_min_chars``, each string over ``prune_arg_max_chars`` is shortened. The
  arguments are parsed and re-serialized, so the JSON stays valid; arguments that are not valid
  JSON are left alone (byte slicing them made a 400 on every later turn elsewhere).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentsh.config import ContextSettings
from agentsh.context.view import ContextEntry, ContextView
from agentsh.session.entries import MessageEntry, ToolCall, ToolResultEntry
from agentsh.values import loads_json

PRUNED_SUFFIX = "(old output pruned; run the tool again to see it)"
_ARG_HEAD_CHARS = 150


@dataclass(frozen=True, slots=True)
class PruneResult:
    replacements: dict[str, str]  # carried + new, tool-result entry id -> text
    argument_replacements: dict[str, str]  # carried + new, tool-call id -> arguments JSON
    saved_tokens: int
    deduplicated: int
    stubbed: int
    shortened_calls: int

    @property
    def changed(self) -> bool:
        return bool(self.deduplicated or self.stubbed or self.shortened_calls)


def prune(
    view: ContextView,
    old_before: int,
    settings: ContextSettings,
    count: Callable[[str], int],
) -> PruneResult:
    """Prune ``view``; entries before index ``old_before`` are older than the kept turns."""
    entries = view.entries
    replacements = dict(view.replacements)
    arg_replacements = dict(view.argument_replacements)
    calls = _calls_by_id(entries)
    saved = 0
    deduplicated = stubbed = shortened = 0

    # Newest first, so the newest copy of each output is the one that stays.
    newest_copy: set[str] = set()
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if not isinstance(entry, ToolResultEntry) or entry.id in replacements:
            continue
        content = entry.content
        if len(content) >= settings.prune_dedupe_min_chars:
            if content in newest_copy:
                name = entry.tool_name or "tool"
                note = f"[{name}] identical to a later {name} output below; omitted here"
                replacements[entry.id] = note
                saved += max(0, count(content) - count(note))
                deduplicated += 1
                continue
            newest_copy.add(content)
        if index < old_before and len(content) > settings.prune_old_output_min_chars:
            line = stub(entry, calls.get(entry.tool_call_id))
            if len(line) >= len(content):
                continue
            replacements[entry.id] = line
            saved += max(0, count(content) - count(line))
            stubbed += 1

    for entry in entries[:old_before]:
        if not isinstance(entry, MessageEntry):
            continue
        for call in entry.tool_calls:
            if call.id in arg_replacements:
                continue
            if len(call.arguments) <= settings.prune_arg_container_min_chars:
                continue
            short = shorten_arguments(call.arguments, settings.prune_arg_max_chars)
            if short is not None and len(short) < len(call.arguments):
                arg_replacements[call.id] = short
                saved += max(0, count(call.arguments) - count(short))
                shortened += 1

    return PruneResult(replacements, arg_replacements, saved, deduplicated, stubbed, shortened)


def _calls_by_id(entries: list[ContextEntry]) -> dict[str, ToolCall]:
    calls: dict[str, ToolCall] = {}
    for entry in entries:
        if isinstance(entry, MessageEntry):
            for call in entry.tool_calls:
                calls[call.id] = call
    return calls


def shorten_arguments(arguments: str, max_chars: int) -> str | None:
    """The arguments with every string over ``max_chars`` shortened; None if not valid JSON."""
    try:
        value = loads_json(arguments)
    except json.JSONDecodeError:
        return None
    changed = [False]

    def walk(node: Any) -> Any:
        if isinstance(node, str) and len(node) > max_chars:
            changed[0] = True
            head = node[: min(_ARG_HEAD_CHARS, max_chars)]
            return f"{head}...[shortened: {len(node):,} chars in all]"
        if isinstance(node, dict):
            return {key: walk(item) for key, item in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result = walk(value)
    if not changed[0]:
        return None
    return json.dumps(result, ensure_ascii=False)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _first(args: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if args.get(key) not in (None, ""):
            return args[key]
    return None


def _line_count(text: str) -> int:
    return text.count("\n") + 1 if text else 0


def stub(result: ToolResultEntry, call: ToolCall | None) -> str:
    """One line saying what a tool call did, for an old output that leaves the context."""
    name = result.tool_name or (call.name if call is not None else "tool")
    args = call.parsed_arguments() if call is not None else {}
    details = result.details or {}
    lines = _line_count(result.content)
    error = " (error)" if result.is_error else ""
    path = _first(args, "path", "file_path", "file", "filename")
    match name:
        case "bash" | "shell":
            command = _one_line(_first(args, "command", "cmd") or "", 80)
            code = details.get("exit_code")
            ending = f"exit {code}" if code is not None else ("failed" if error else "done")
            line = f"[bash] ran `{command}` -> {ending}, {lines} lines"
        case "read":
            line = f"[read] {path or '?'} ({_read_range(args, details, lines)}){error}"
        case "grep" | "search":
            pattern = _one_line(_first(args, "pattern", "query", "regex") or "", 60)
            where = path or _first(args, "glob", "include") or "."
            line = f"[grep] `{pattern}` in {where} -> {lines} lines{error}"
        case "find" | "glob" | "ls":
            pattern = _one_line(_first(args, "pattern", "glob") or path or ".", 60)
            line = f"[{name}] {pattern} -> {lines} lines{error}"
        case "write" | "edit":
            line = f"[{name}] {path or '?'} -> {'failed' if error else 'done'}"
        case _:
            shown = ", ".join(
                f"{key}={_one_line(json.dumps(value, ensure_ascii=False), 40)}"
                for key, value in list(args.items())[:4]
            )
            line = f"[{name}] {shown} -> {lines} lines{error}"
    return f"{line} {PRUNED_SUFFIX}"


def _read_range(args: dict[str, Any], details: dict[str, Any], lines: int) -> str:
    start = _as_int(_first(args, "offset", "start_line", "line")) or _as_int(
        details.get("start_line")
    )
    start = start or 1
    limit = _as_int(_first(args, "limit", "lines"))
    end = _as_int(details.get("end_line")) or _as_int(args.get("end_line"))
    if end is None:
        end = start + (limit if limit else lines) - 1
    total = _as_int(details.get("total_lines"))
    return f"{start}-{end} of {total} lines" if total else f"{start}-{end}"


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None
