"""Session renderings for people and tools: transcript, tree, JSON, Markdown, HTML, JSONL.

Pure functions over a loaded :class:`Session` (no terminal, no files): ``agentsh sessions
show`` and ``export`` print what these return, and other front ends may reuse them. Every
entry type renders, unknown ones included ("kept, shown as such"); labels appear next to the
entry they name. HTML is one self-contained page (inline CSS, no scripts, everything escaped).
JSONL is the file's own bytes for the header and every line that loaded, so a copy can be
opened again and differs from the original only by the damage it left out.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from agentsh.session.entries import (
    FORMAT_VERSION,
    AnyEntry,
    BranchSummaryEntry,
    CheckpointEntry,
    CompactionEntry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelCallEntry,
    ModelChangeEntry,
    NameEntry,
    StopReason,
    ToolResultEntry,
    UnknownEntry,
)
from agentsh.session.log import LoadProblem, gc_paused, parse_log
from agentsh.session.session import Session
from agentsh.session.tree import SessionTree
from agentsh.termsafe import printable
from agentsh.values import loads_json

TOOL_OUTPUT_LINES = 20  # tool output lines shown in a terminal transcript before "… N more"


# -- JSON for tools ----------------------------------------------------------------------------


def session_json(session: Session, *, tree: bool = False) -> dict[str, Any]:
    """The current path's entries (or, with ``tree``, every entry with its children)."""
    t = session.tree
    data: dict[str, Any] = {
        "session": session.header.to_json(),
        "file": str(session.path) if session.path else None,
        "leafId": t.leaf_id,
        "pathIds": t.path_ids(),
        "labels": dict(t.labels),
        "problems": [str(p) for p in session.problems],
    }
    if tree:
        data["roots"] = list(t.roots)
        data["entries"] = [
            {**entry.to_json(), "children": list(t.children_of(entry.id))}
            for entry in t.nodes.values()
        ]
    else:
        data["entries"] = [entry.to_json() for entry in t.path()]
    return data


def write_session_json(session: Session, out: IO[str], *, tree: bool = False) -> None:
    """:func:`session_json`, written as it is made: one entry per line through the C encoder,
    never the whole document in memory (``json.dump`` with ``indent`` runs the pure-Python
    encoder: 21 s for 100,000 entries)."""
    t = session.tree
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    path = session.current_path()  # walked once: 100,000 entries take a quarter second
    head: dict[str, Any] = {
        "session": session.header.to_json(),
        "file": str(session.path) if session.path else None,
        "leafId": t.leaf_id,
        "pathIds": [entry.id for entry in path],
        "labels": dict(t.labels),
        "problems": [str(p) for p in session.problems],
    }
    if tree:
        head["roots"] = list(t.roots)
    out.write("{\n")
    for key, value in head.items():
        out.write(f"  {dumps(key)}: {dumps(value)},\n")
    out.write('  "entries": [')
    entries: Iterable[str] = (
        (
            dumps({**entry.to_json(), "children": list(t.children_of(entry.id))})
            for entry in t.nodes.values()
        )
        if tree
        else _path_lines(session, path, dumps)
    )
    batch: list[str] = []
    separator = "\n    "
    for entry in entries:
        batch.append(separator + entry)
        separator = ",\n    "
        if len(batch) >= 1024:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))
    out.write("\n  ]\n}\n" if separator != "\n    " else "]\n}\n")


def _path_lines(
    session: Session, path: list[AnyEntry], dumps: Callable[[Any], str]
) -> Iterator[str]:
    """The JSON of each entry on the current path. An entry whose file line is exactly what
    agentsh writes for it (this format version, the canonical key order) is that line as it
    is, which spares decoding and encoding it again; any other is encoded afresh."""
    lines: list[bytes] = []
    numbers: dict[str, int] = {}
    if session.path is not None and session.header.version == FORMAT_VERSION:
        t = session.tree
        numbers = {e.id: n for e, n in zip(t.records, t.record_lines, strict=True) if n}
        try:
            lines = session.path.read_bytes().split(b"\n")
        except OSError:
            lines = []
    for entry in path:
        number = numbers.get(entry.id, 0)
        if 0 < number <= len(lines):
            raw = lines[number - 1]
            prefix = f'{{"type":"{entry.TYPE}","id":"{entry.id}",'.encode()
            if raw.startswith(prefix) and raw.endswith(b"}"):
                yield raw.decode("utf-8", "replace")
                continue
        yield dumps(entry.to_json())


# -- JSONL: the file's own valid lines ---------------------------------------------------------


def valid_jsonl(data: bytes) -> tuple[bytes, list[LoadProblem]]:
    """The header line and every line that loaded, byte for byte, in file order, and the
    problems found with the lines left out."""
    loaded = parse_log(data)
    with gc_paused():
        tree, tree_problems = SessionTree.build(loaded.entries, loaded.line_numbers, loaded.damaged)
    keep = {1, *tree.record_lines}
    out: list[bytes] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if number in keep:
            out.append(line + b"\n")  # a valid last line may lack its newline; a copy ends it
    problems = sorted(loaded.problems + tree_problems, key=lambda p: p.line)
    return b"".join(out), problems


# -- one-line summaries (tree rows) ------------------------------------------------------------


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)].rstrip() + "…"


def entry_summary(entry: AnyEntry, limit: int = 200) -> str:
    """What an entry is, on one line (tree rows, lists)."""
    match entry:
        case MessageEntry():
            text = entry.content
            if entry.tool_calls:
                calls = ", ".join(c.name for c in entry.tool_calls)
                text = f"{text} [{calls}]" if text.strip() else f"[{calls}]"
            if entry.error:
                text = f"{text} (error: {entry.error})"
            return one_line(f"{entry.role.value}: {text}", limit)
        case ToolResultEntry():
            status = "error" if entry.is_error else "ok"
            return one_line(f"{entry.tool_name} -> {status}: {entry.content}", limit)
        case CompactionEntry():
            return one_line(
                f"compaction ({entry.tier}, {entry.tokens_before} -> {entry.tokens_after} "
                f"tokens): {entry.summary}",
                limit,
            )
        case BranchSummaryEntry():
            return one_line(f"branch summary: {entry.summary}", limit)
        case ModelChangeEntry():
            return one_line(f"model -> {entry.model}", limit)
        case UnknownEntry():
            return one_line(f"[unknown entry type {entry.type_name!r}]", limit)
        case NameEntry():
            return one_line(f"[name: {entry.name}]" if entry.name else "[name cleared]", limit)
        case ModelCallEntry():
            spent = f"{entry.usage.input_tokens} in / {entry.usage.output_tokens} out"
            return one_line(f"[model call: {entry.purpose}, {spent}: {entry.note}]", limit)
        case LabelEntry() | LeafEntry() | CheckpointEntry():
            return one_line(f"[{entry.TYPE} record]", limit)


# -- terminal transcript and tree --------------------------------------------------------------


def transcript_lines(session: Session, *, tool_output_lines: int = TOOL_OUTPUT_LINES) -> list[str]:
    """A readable transcript of the current path, for a terminal or a pager."""
    t = session.tree
    out = [f"session {session.id}"]
    if session.name:
        out.append(f"name    {session.name}")
    if session.path:
        out.append(f"file    {session.path}")
    out.append(f"cwd     {session.header.cwd}")
    out.append(f"created {session.header.timestamp}")
    position = t.branch_position()
    forks = len(t.branch_points())
    if forks:
        out.append(
            f"branch  {position.index} of {position.count} at {position.fork_id} "
            f"({forks} fork{'s' if forks != 1 else ''}; `--tree` shows them all)"
        )
    for entry in t.path():
        out.append("")
        out.extend(_entry_block(entry, t.labels.get(entry.id, ""), tool_output_lines))
    return out


def _heading(kind: str, entry: AnyEntry, label: str, *details: str) -> str:
    parts = [kind, *[d for d in details if d], entry.id, _short_time(entry.timestamp)]
    text = "── " + " · ".join(p for p in parts if p)
    return f"{text} [{label}]" if label else text


def _entry_block(entry: AnyEntry, label: str, tool_lines: int) -> list[str]:
    match entry:
        case MessageEntry():
            details = [entry.model or ""] if entry.role.value == "assistant" else []
            if entry.usage is not None:
                details.append(f"{entry.usage.input_tokens} in / {entry.usage.output_tokens} out")
                if entry.usage.cost:
                    details.append(f"${entry.usage.cost:.4f}")
            if entry.stop_reason in (StopReason.ABORTED, StopReason.LENGTH):
                details.append(entry.stop_reason.value)
            lines = [_heading(entry.role.value, entry, label, *details)]
            if entry.content:
                lines.extend(entry.content.splitlines())
            for call in entry.tool_calls:
                lines.append(f"  -> {call.name} {_compact_args(call.arguments)}")
            if entry.error:
                lines.append(f"  error: {entry.error}")
            return lines
        case ToolResultEntry():
            status = "error" if entry.is_error else "ok"
            extra = "truncated" if entry.truncated else ""
            lines = [_heading(f"tool {entry.tool_name}", entry, label, status, extra)]
            body = entry.content.splitlines()
            shown = body[:tool_lines]
            lines.extend(f"  {line}" for line in shown)
            if len(body) > len(shown):
                lines.append(f"  … {len(body) - len(shown)} more lines")
            return lines
        case CompactionEntry():
            lines = [
                _heading(
                    f"compaction ({entry.tier})",
                    entry,
                    label,
                    f"{entry.tokens_before} -> {entry.tokens_after} tokens",
                )
            ]
            lines.extend(entry.summary.splitlines())
            return lines
        case BranchSummaryEntry():
            return [_heading("branch summary", entry, label), *entry.summary.splitlines()]
        case ModelChangeEntry():
            return [_heading(f"model changed to {entry.model}", entry, label)]
        case UnknownEntry():
            return [
                _heading(f"unknown entry type {entry.type_name!r}", entry, label),
                "  (kept as written; not sent to the model)",
            ]
    return [_heading(entry.TYPE or type(entry).__name__, entry, label)]


def tree_lines(session: Session, width: int = 100) -> list[str]:
    """Every entry as a tree: forks indent, a straight run of replies does not (Pi's layout).

    ``•`` marks the current path, ``<- leaf`` the leaf, ``[label]`` a label, ``✎ N files``
    an entry whose file checkpoints changed files.
    """
    t = session.tree
    on_path = set(t.path_ids())
    named: dict[str, set[str]] = {}
    counted: dict[str, int] = {}
    for record in t.records:
        # (files restored to an entry were not changed by it)
        if isinstance(record, CheckpointEntry) and record.changed and record.reason != "restored":
            named.setdefault(record.target_id, set()).update(record.files)
            counted[record.target_id] = max(counted.get(record.target_id, 0), record.changed)
    edited = {target: max(len(named[target]), count) for target, count in counted.items()}
    lines: list[str] = []
    roots = t.roots
    # (id, text before the row, prefix inherited by the rows below it)
    stack: list[tuple[str, str, str]] = []
    if len(roots) == 1:
        stack.append((roots[0], "", ""))
    else:
        for index in range(len(roots) - 1, -1, -1):
            last = index == len(roots) - 1
            stack.append((roots[index], "└─ " if last else "├─ ", "   " if last else "│  "))
    while stack:
        entry_id, lead, cont = stack.pop()
        entry = t.nodes[entry_id]
        mark = "• " if entry_id in on_path else "  "
        label = t.labels.get(entry_id)
        files = edited.get(entry_id, 0)
        suffix = (
            (f" [{label}]" if label else "")
            + (f" ✎ {files} file{'s' if files != 1 else ''}" if files else "")
            + (" <- leaf" if entry_id == t.leaf_id else "")
        )
        room = max(20, width - len(lead) - len(mark) - len(suffix) - 9)
        lines.append(f"{lead}{mark}{entry_id} {entry_summary(entry, room)}{suffix}")
        kids = t.children_of(entry_id)
        if len(kids) == 1:
            stack.append((kids[0], cont, cont))
        else:
            for index in range(len(kids) - 1, -1, -1):
                last = index == len(kids) - 1
                stack.append(
                    (
                        kids[index],
                        cont + ("└─ " if last else "├─ "),
                        cont + ("   " if last else "│  "),
                    )
                )
    return lines


# -- Markdown ----------------------------------------------------------------------------------


def to_markdown(session: Session) -> str:
    t = session.tree
    out = [
        f"# Session {session.id[:8]}",
        "",
        f"- id: `{session.id}`",
        f"- cwd: `{session.header.cwd}`",
        f"- created: {session.header.timestamp}",
    ]
    if session.name:
        out.append(f"- name: {session.name}")
    if session.header.parent_session:
        out.append(f"- forked from: `{session.header.parent_session}`")
    for entry in t.path():
        out.append("")
        out.extend(_markdown_block(entry, t.labels.get(entry.id, "")))
    # A Markdown file is read with `cat` and `less` too: control sequences from the model or
    # a file it read are shown, never sent to the reader's terminal.
    return printable("\n".join(out).rstrip() + "\n")


def _fence(text: str, info: str = "") -> list[str]:
    """A code fence longer than any backtick run inside ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [f"{ticks}{info}", *text.splitlines(), ticks]


def _md_heading(title: str, entry: AnyEntry, label: str) -> str:
    tag = f" — {label}" if label else ""
    return f"## {title}{tag}\n\n<sub>{entry.id} · {entry.timestamp}</sub>\n"


def _markdown_block(entry: AnyEntry, label: str) -> list[str]:
    match entry:
        case MessageEntry():
            title = "User" if entry.role.value == "user" else "Assistant"
            if entry.model and entry.role.value == "assistant":
                title += f" ({entry.model})"
            lines = [_md_heading(title, entry, label)]
            if entry.content:
                lines.append(entry.content)
            for call in entry.tool_calls:
                lines.append("")
                lines.append(f"**Tool call** `{call.name}`")
                lines.append("")
                lines.extend(_fence(_pretty_args(call.arguments), "json"))
            if entry.error:
                lines.append("")
                lines.append(f"> **Error:** {entry.error}")
            return lines
        case ToolResultEntry():
            status = " (error)" if entry.is_error else ""
            lines = [_md_heading(f"Tool result: {entry.tool_name}{status}", entry, label)]
            lines.extend(_fence(entry.content))
            return lines
        case CompactionEntry():
            return [
                _md_heading(f"Compaction ({entry.tier})", entry, label),
                f"_{entry.tokens_before} -> {entry.tokens_after} tokens_",
                "",
                entry.summary,
            ]
        case BranchSummaryEntry():
            return [_md_heading("Branch summary", entry, label), entry.summary]
        case ModelChangeEntry():
            return [_md_heading(f"Model changed to {entry.model}", entry, label)]
        case UnknownEntry():
            return [
                _md_heading(f"Unknown entry type `{entry.type_name}`", entry, label),
                *_fence(json.dumps(entry.raw, ensure_ascii=False, indent=2), "json"),
            ]
    return [_md_heading(entry.TYPE or type(entry).__name__, entry, label)]


# -- HTML --------------------------------------------------------------------------------------

_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --bg: #ffffff; --muted: #656d76;
  --user: #ddf4ff; --assistant: #f6f8fa; --tool: #fff8c5; --error: #ffebe9; --border: #d0d7de; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8d96a0;
  --user: #0c2d6b; --assistant: #161b22; --tool: #3b2e00; --error: #5d0f12; --border: #30363d; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
header p { color: var(--muted); margin: .2rem 0; }
section { border: 1px solid var(--border); border-radius: 8px; padding: .6rem 1rem;
  margin: 1rem 0; }
section.user { background: var(--user); } section.assistant { background: var(--assistant); }
section.tool { background: var(--tool); } section.error { background: var(--error); }
h2 { font-size: .95rem; margin: 0 0 .4rem; } h2 small { color: var(--muted); font-weight: normal; }
.label { border: 1px solid var(--border); border-radius: 4px; padding: 0 .3rem; }
pre { white-space: pre-wrap; word-wrap: break-word; margin: .3rem 0;
  font: 13px/1.4 ui-monospace, monospace; }
"""


def to_html(session: Session) -> str:
    t = session.tree
    title = f"agentsh session {session.id[:8]}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_e(title)}</h1>",
        f"<p>id {_e(session.id)}</p><p>cwd {_e(session.header.cwd)}</p>",
        f"<p>created {_e(session.header.timestamp)}</p>",
        f"<p>name {_e(session.name)}</p>" if session.name else "",
        "</header><main>",
    ]
    for entry in t.path():
        parts.append(_html_block(entry, t.labels.get(entry.id, "")))
    parts.append("</main></body></html>")
    return printable("\n".join(parts) + "\n")


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _html_section(kind: str, title: str, entry: AnyEntry, label: str, body: Iterable[str]) -> str:
    tag = f' <span class="label">{_e(label)}</span>' if label else ""
    heading = f"<h2>{_e(title)}{tag} <small>{_e(entry.id)} · {_e(entry.timestamp)}</small></h2>"
    return f'<section class="{kind}">{heading}{"".join(body)}</section>'


def _pre(text: str) -> str:
    return f"<pre>{_e(text)}</pre>"


def _html_block(entry: AnyEntry, label: str) -> str:
    match entry:
        case MessageEntry():
            role = entry.role.value
            title = "User" if role == "user" else "Assistant"
            if entry.model and role == "assistant":
                title += f" ({entry.model})"
            body = [_pre(entry.content)] if entry.content else []
            for call in entry.tool_calls:
                body.append(
                    f"<details open><summary>tool call {_e(call.name)}</summary>"
                    f"{_pre(_pretty_args(call.arguments))}</details>"
                )
            if entry.error:
                body.append(f"<p><strong>Error:</strong> {_e(entry.error)}</p>")
            return _html_section(role, title, entry, label, body)
        case ToolResultEntry():
            kind = "tool error" if entry.is_error else "tool"
            status = " (error)" if entry.is_error else ""
            return _html_section(
                kind, f"Tool result: {entry.tool_name}{status}", entry, label, [_pre(entry.content)]
            )
        case CompactionEntry():
            return _html_section(
                "assistant",
                f"Compaction ({entry.tier}, {entry.tokens_before} -> {entry.tokens_after} tokens)",
                entry,
                label,
                [_pre(entry.summary)],
            )
        case BranchSummaryEntry():
            return _html_section("assistant", "Branch summary", entry, label, [_pre(entry.summary)])
        case ModelChangeEntry():
            return _html_section("assistant", f"Model changed to {entry.model}", entry, label, [])
        case UnknownEntry():
            raw = json.dumps(entry.raw, ensure_ascii=False, indent=2)
            return _html_section(
                "assistant", f"Unknown entry type {entry.type_name!r}", entry, label, [_pre(raw)]
            )
    return _html_section("assistant", entry.TYPE or type(entry).__name__, entry, label, [])


# -- helpers -----------------------------------------------------------------------------------


def _pretty_args(arguments: str) -> str:
    try:
        return json.dumps(loads_json(arguments or "{}"), ensure_ascii=False, indent=2)
    except json.JSONDecodeError:
        return arguments


def _compact_args(arguments: str, limit: int = 160) -> str:
    try:
        text = json.dumps(loads_json(arguments or "{}"), ensure_ascii=False)
    except json.JSONDecodeError:
        text = arguments
    return one_line(text, limit)


def _short_time(stamp: str) -> str:
    """``2026-11-29T20:06:02.814Z`` -> ``2026-11-29 20:06`` (UTC, as written)."""
    if len(stamp) >= 16 and stamp[10] == "T":
        return f"{stamp[:10]} {stamp[11:16]}"
    return stamp
