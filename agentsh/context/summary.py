"""Phase 3 of compaction: the structured summary, and its format.

The summary is markdown with one ``## `` heading per section (SPEC §4, 13 sections for the
tiered engine, 6 for the Pi-style one). A model writes most sections from a labelled plain-text
transcript (``[User]:``, ``[Assistant]:``, ``[Assistant tool calls]:``, ``[Tool result]:``), a
form models summarize instead of continuing. The sections code owns (**Active Task**,
**Relevant Files**, **Last Error** and the **Archived Turns** list) are never left to the model:
:mod:`agentsh.context.facts` rewrites them at every compaction, so they survive any number of
compactions. A later compaction hands the model the previous summary in ``<previous-summary>``
and asks for an update, not a fresh summary; the user's instructions (``/compact <text>``,
``context.summary_instructions``) steer it.

:class:`SummaryDoc` parses and renders that format; :func:`summary_request` builds the model
call; :func:`accept_summary` rejects empty or unstructured output (which then falls back to
archiving, never to losing turns).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentsh.context.prune import PRUNED_SUFFIX, stub
from agentsh.context.view import ContextEntry
from agentsh.session.entries import BranchSummaryEntry, MessageEntry, Role, ToolResultEntry

ACTIVE_TASK = "Active Task"
RELEVANT_FILES = "Relevant Files"
ARCHIVED = "Archived Turns"
LAST_ERROR = "Last Error"
CODE_SECTIONS = frozenset({ACTIVE_TASK, RELEVANT_FILES, LAST_ERROR})

TOOL_RESULT_CHARS = 2_000
TOOL_ARGS_CHARS = 500
ACTIVE_TASK_MAX_CHARS = 8_000
FILES_SHOWN = 100  # paths a file list names at most, whatever the window


@dataclass(frozen=True, slots=True)
class Template:
    """The sections of a summary, in order, with what the model is told to put in each."""

    name: str
    sections: tuple[tuple[str, str], ...]  # (heading, instruction); code-filled ones have ""

    @property
    def headings(self) -> tuple[str, ...]:
        return tuple(h for h, _ in self.sections)

    @property
    def model_sections(self) -> tuple[tuple[str, str], ...]:
        return tuple((h, i) for h, i in self.sections if i)


TIERED = Template(
    "tiered",
    (
        (ACTIVE_TASK, ""),
        ("Goal", "what the user wants overall, in one or two sentences"),
        ("Constraints & Preferences", "rules, preferences and requirements the user stated"),
        ("Completed Actions", "what has been done, with the exact file names and commands"),
        ("Active State", "where things stand now: branch, test status, what runs, what fails"),
        ("In Progress", "what was being done when the conversation was cut"),
        ("Blocked", "problems not solved yet, with the EXACT error text quoted"),
        ("Key Decisions", "choices made and why"),
        ("Resolved Questions", "questions asked and their answers"),
        ("Pending User Asks", "things the user asked for that are not done yet"),
        (RELEVANT_FILES, ""),
        (LAST_ERROR, ""),
        ("Remaining Work", "the next steps, in order"),
        ("Critical Context", "facts, values and identifiers that must not be lost"),
    ),
)

PI = Template(
    "pi",
    (
        (ACTIVE_TASK, ""),
        ("Goal", "what the user wants overall"),
        ("Constraints & Preferences", "rules and preferences the user stated"),
        ("Progress", "done, in progress and blocked (quote errors exactly)"),
        ("Key Decisions", "choices made and why"),
        ("Next Steps", "what to do next, in order"),
        ("Critical Context", "facts, values and identifiers that must not be lost"),
        (RELEVANT_FILES, ""),
        (LAST_ERROR, ""),
    ),
)

SYSTEM_PROMPT = (
    "You write the working-memory summary of a coding session so that another instance of the "
    "assistant can continue the work. You are not a participant: do not answer, continue or act "
    "on the conversation, and do not call tools. Output only the summary, in the markdown format "
    "you are given."
)


def _norm(heading: str) -> str:
    heading = re.sub(r"\(.*?\)", "", heading)
    return re.sub(r"[^a-z&]+", "", heading.lower())


_HEADING = re.compile(r"^\s*(?:#{1,4}\s*(.+?)\s*#*\s*|\*\*(.+?)\*\*\s*:?\s*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _known_headings(template: Template) -> dict[str, str]:
    known = {_norm(h): h for h in (*template.headings, *TIERED.headings, *PI.headings)}
    known[_norm(ARCHIVED)] = ARCHIVED
    return known


def _heading(line: str, known: dict[str, str]) -> str | None:
    match = _HEADING.match(line)
    return known.get(_norm(match.group(1) or match.group(2))) if match else None


def fence_for(text: str) -> str:
    """A backtick fence no line of ``text`` can close (longer than any backtick run in it)."""
    runs = re.findall(r"`+", text)
    return "`" * max(3, max((len(r) for r in runs), default=0) + 1)


def fenced_if_needed(text: str) -> str:
    """``text`` (a user's request, written by code) as is, or in a fence when a line of it
    would read as a section heading or open a fence: a later compaction reads it back from the
    summary, and a pasted spec's "## Goal" line cut it there."""
    known = _known_headings(TIERED)
    if not any(_FENCE.match(line) or _heading(line, known) for line in text.splitlines()):
        return text
    fence = fence_for(text)
    return f"{fence}text\n{text}\n{fence}"


def unfenced(text: str) -> str:
    """The text :func:`fenced_if_needed` wrapped."""
    lines = text.split("\n")
    if len(lines) >= 2 and lines[0].endswith("text") and lines[0][:-4] == lines[-1]:
        fence = lines[-1]
        if len(fence) >= 3 and set(fence) == {"`"}:
            return "\n".join(lines[1:-1])
    return text


@dataclass(slots=True)
class SummaryDoc:
    """A summary split into named sections plus the accumulated archive pointers."""

    sections: dict[str, str] = field(default_factory=dict)
    pointers: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str, template: Template = TIERED, *, fences: bool = True) -> SummaryDoc:
        """Sections by heading (``## Goal``, ``### Goal``, ``**Goal**``); text before the first
        heading and the Archived Turns section are pointers. In the sections code writes, a
        heading inside a fenced block is text (``fences``; not in a model's reply, whose
        sections of that name are dropped anyway, and whose unclosed fence must not swallow
        the sections after it)."""
        known = _known_headings(template)
        doc = cls()
        current: str | None = None
        body: list[str] = []
        preamble: list[str] = []
        fence = ""  # the fence open in a section code wrote, whose lines are never headings

        def flush() -> None:
            if current is None:
                return
            text = "\n".join(body).strip()
            if current == ARCHIVED:
                doc.pointers.extend(line for line in text.splitlines() if line.strip())
            else:
                doc.sections[current] = text

        for line in text.splitlines():
            if fences and current in CODE_SECTIONS:
                opened = _FENCE.match(line)
                if opened and not fence:
                    fence = opened.group(1)
                elif opened and opened.group(1).startswith(fence) and not line.strip().strip("`~"):
                    fence = ""
                if fence or opened:
                    body.append(line)
                    continue
            name = _heading(line, known)
            if name is not None:
                flush()
                current, body, fence = name, [], ""
            elif current is None:
                preamble.append(line)
            else:
                body.append(line)
        flush()
        doc.pointers[:0] = [line for line in preamble if line.strip()]
        return doc

    def render(self, template: Template = TIERED) -> str:
        parts = []
        for heading in template.headings:
            if heading in self.sections:
                parts.append(f"## {heading}\n{self.sections[heading].strip() or '(none)'}")
        if not parts:
            return "\n".join(self.pointers)
        if self.pointers:
            parts.append(f"## {ARCHIVED}\n" + "\n".join(self.pointers))
        return "\n\n".join(parts)

    @property
    def structured(self) -> bool:
        return bool(self.sections)


def active_task_text(request: str) -> str:
    """The newest user request, verbatim; only a huge paste is cut (head and tail kept)."""
    text = request.strip()
    if len(text) <= ACTIVE_TASK_MAX_CHARS:
        return text
    half = ACTIVE_TASK_MAX_CHARS // 2
    omitted = len(text) - 2 * half
    return (
        f"{text[:half]}\n[... {omitted:,} characters of this request omitted ...]\n{text[-half:]}"
    )


def files_text(
    files_read: Sequence[str], files_modified: Sequence[str], max_chars: int | None = None
) -> str:
    """The Relevant Files body: modified files, then read ones, each newest first (both lists
    come oldest first, by their last touch). At most :data:`FILES_SHOWN` paths a list and
    ``max_chars`` for both (:func:`agentsh.context.prompt_budget.files_chars`): modified files
    take the room first and the newest one is always named. What does not fit is counted on an
    "… and N more" line, never dropped silently."""
    modified, read = list(reversed(files_modified)), list(reversed(files_read))
    room = max_chars if max_chars is not None else sys.maxsize
    first = _listing("Modified", modified, room - len(_listing("Read", read, 0, False)) - 1, True)
    return first + "\n" + _listing("Read", read, room - len(first) - 1, False)


def _more(count: int) -> str:
    return f"  … and {count} more, touched earlier"


def _listing(label: str, paths: Sequence[str], room: int, name_newest: bool) -> str:
    """One list, newest first, within ``room`` characters (its head always stays)."""
    if not paths:
        return f"- {label}: (none)"
    head = f"- {label} (newest first): " if len(paths) > 1 else f"- {label}: "
    more = len(_more(len(paths))) + 1  # the longest "… and N more" line, with its newline
    used, shown = len(head), 0
    while shown < min(len(paths), FILES_SHOWN):
        used += len(paths[shown]) + 2 + (2 if shown else 0)
        left = more if shown + 1 < len(paths) else 0
        if used + left > room and not (name_newest and shown == 0):
            break
        shown += 1
    if not shown:
        return f"- {label}: {len(paths)} files, not listed (no room on this window)"
    text = head + ", ".join(f"`{p}`" for p in paths[:shown])
    return text + ("\n" + _more(len(paths) - shown) if shown < len(paths) else "")


def accept_summary(text: str, template: Template) -> SummaryDoc | None:
    """The model's summary if it is one: enough of the requested sections, not a reply. A
    reply wrapped whole in a code fence is unwrapped, and a fence a section leaves open is
    closed at its end: code writes sections after the model's, and the summary's own sections
    after them, which an open fence made one code block (the closing fence of a reply wrapped
    in ```markdown stayed at the end of its last section)."""
    if not text or len(text.strip()) < 40:
        return None
    doc = SummaryDoc.parse(_unwrapped(text, template), template, fences=False)
    wanted = {h for h, _ in template.model_sections}
    found = wanted & doc.sections.keys()
    if len(found) < min(3, len(wanted)):
        return None
    doc.sections = {h: _closed(b) for h, b in doc.sections.items() if h in wanted}
    doc.pointers = []  # pointers are code's; a model echoing them must not duplicate them
    return doc


def _unwrapped(text: str, template: Template) -> str:
    """What a reply wrapped in a code fence (a fence opened before its first heading) holds:
    the lines up to the last line that closes that fence (text after it, "Let me know...", is
    no section's)."""
    known = _known_headings(template)
    lines = text.splitlines()
    start, fence = next(
        ((i, m.group(1)) for i, line in enumerate(lines) if (m := _FENCE.match(line))), (-1, "")
    )
    if start < 0 or any(_heading(line, known) for line in lines[:start]):
        return text
    for end in range(len(lines) - 1, start, -1):
        closing = lines[end].strip()
        if closing.startswith(fence) and not closing.strip(fence[0]):
            return "\n".join(lines[start + 1 : end])
    return "\n".join(lines[start + 1 :])


def _closed(body: str) -> str:
    """``body`` with a fence it leaves open closed at its end."""
    fence = ""
    for line in body.splitlines():
        opened = _FENCE.match(line)
        if opened and not fence:
            fence = opened.group(1)
        elif opened and opened.group(1).startswith(fence) and not line.strip().strip(fence[0]):
            fence = ""
    return f"{body}\n{fence}" if fence else body


# -- the transcript and the request -----------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit:,} more chars]"


def serialize(entries: Iterable[ContextEntry]) -> str:
    """The labelled plain-text transcript the summarizer reads."""
    lines: list[str] = []
    for entry in entries:
        match entry:
            case MessageEntry(role=Role.USER):
                lines.append(f"[User]: {entry.content}")
            case MessageEntry():
                if entry.content.strip():
                    lines.append(f"[Assistant]: {entry.content}")
                if entry.tool_calls:
                    calls = "; ".join(
                        f"{c.name}({_cut(c.arguments, TOOL_ARGS_CHARS)})" for c in entry.tool_calls
                    )
                    lines.append(f"[Assistant tool calls]: {calls}")
            case ToolResultEntry():
                flag = ", error" if entry.is_error else ""
                body = _cut(entry.content, TOOL_RESULT_CHARS)
                lines.append(f"[Tool result] ({entry.tool_name}{flag}): {body}")
            case BranchSummaryEntry():
                lines.append(f"[Note about another branch]: {entry.summary}")
    return "\n\n".join(lines)


def fit_transcript(transcript: str, max_chars: int) -> str:
    """Keep the start and (mostly) the end of an over-long transcript: the summary request
    itself must never overflow the summary model's window."""
    if len(transcript) <= max_chars:
        return transcript
    head = max_chars // 5
    tail = max_chars - head
    omitted = len(transcript) - head - tail
    return (
        f"{transcript[:head]}\n\n[... {omitted:,} characters of the conversation omitted "
        f"...]\n\n{transcript[-tail:]}"
    )


def summary_request(
    transcript: str,
    template: Template,
    *,
    previous: str = "",
    newest_request: str = "",
    split_turn: bool = False,
    max_tokens: int = 4096,
    instructions: str = "",
) -> list[dict[str, Any]]:
    """The messages of the summary call; ``instructions`` are the user's, to steer it."""
    previous_doc = SummaryDoc.parse(previous, template) if previous.strip() else None
    parts = [f"<conversation>\n{transcript}\n</conversation>"]
    if previous_doc is not None and previous_doc.structured:
        kept = SummaryDoc(
            {h: b for h, b in previous_doc.sections.items() if h not in CODE_SECTIONS}
        )
        parts.append(f"<previous-summary>\n{kept.render(template)}\n</previous-summary>")
        parts.append(
            "The previous summary covers the conversation before the part above. Update it with "
            "the new conversation: keep what is still true, add what is new, move finished work "
            "to the sections for done work, and drop what is obsolete. Do not start from scratch."
        )
    else:
        parts.append("Summarize the conversation above.")
    if split_turn:
        parts.append(
            "The last turn was cut in the middle: its early steps end the conversation above and "
            "its later steps stay in the context verbatim. Say in the progress section what that "
            "turn is doing and what its early steps found."
        )
    if newest_request.strip():
        parts.append(
            "The newest user request (kept verbatim elsewhere; use it to judge what is pending):"
            f"\n<newest-request>\n{_cut(newest_request.strip(), 2_000)}\n</newest-request>"
        )
    if instructions.strip():
        parts.append(
            "The user asked for this summary to follow these instructions (they steer what "
            "to keep and stress; the format below still applies):\n"
            f"<instructions>\n{_cut(instructions.strip(), 2_000)}\n</instructions>"
        )
    headings = "\n".join(f"## {h}\n({i})" for h, i in template.model_sections)
    words = max(150, int(max_tokens * 0.6))
    parts.append(
        "Write exactly these sections, each under its `## ` heading, in this order, and write "
        f"(none) under a section with nothing to say:\n\n{headings}\n\n"
        "Quote file paths, commands, identifiers and error messages exactly. Use short bullet "
        f"points. Stay under {words} words."
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


TRANSCRIPT_CHARS_PER_TOKEN = 3  # a conservative guess, checked by counting afterwards
MIN_TRANSCRIPT_TOKENS = 200  # less is not worth a summary call
_UNKNOWN_WINDOW_TRANSCRIPT_TOKENS = 4_000


def fitted_summary_request(
    transcript: str,
    template: Template,
    *,
    window: int,
    count: Callable[[str], int],
    max_tokens: int,
    **parts: Any,
) -> list[dict[str, Any]] | None:
    """:func:`summary_request` with the transcript cut (:func:`fit_transcript`) so that the
    whole request (prompt, previous summary, instructions) and the reply fit ``window``
    tokens as ``count`` measures them; None when not even a short transcript fits. The
    transcript used to get 4,000 tokens whatever the window: on a 4k window the request and
    its reply overflowed, and a real provider refused the call."""

    def build(text: str) -> list[dict[str, Any]]:
        return summary_request(text, template, max_tokens=max_tokens, **parts)

    def size(messages: list[dict[str, Any]]) -> int:
        return sum(count(str(m["content"])) for m in messages)

    if window <= 0:
        limit = _UNKNOWN_WINDOW_TRANSCRIPT_TOKENS * TRANSCRIPT_CHARS_PER_TOKEN
        return build(fit_transcript(transcript, limit))
    fixed = size(build(""))
    room = window - max_tokens - fixed
    if room < MIN_TRANSCRIPT_TOKENS:
        return None
    chars = room * TRANSCRIPT_CHARS_PER_TOKEN
    for _attempt in range(4):
        messages = build(fit_transcript(transcript, chars))
        used = size(messages)
        if used + max_tokens <= window:
            return messages
        # Denser text than guessed (code, an exact tokenizer): shrink by what it took. From
        # what was sent, not the guess: a transcript shorter than the guess went whole, and
        # shrinking the guess alone left it whole at every attempt (an 8k drive's 12,700
        # characters of dense tool output, 7,300 tokens, fell back to an archive).
        sent = min(chars, len(transcript))
        chars = int(sent * 0.95 * room / max(1, used - fixed))
    return None


def step_lines(entries: Iterable[ContextEntry]) -> list[str]:
    """One line per tool call in ``entries`` (the archived early steps of a split turn)."""
    entries = list(entries)
    results = {e.tool_call_id: e for e in entries if isinstance(e, ToolResultEntry)}
    lines: list[str] = []
    for entry in entries:
        if isinstance(entry, MessageEntry):
            for call in entry.tool_calls:
                result = results.get(call.id)
                if result is not None:
                    lines.append(stub(result, call).removesuffix(" " + PRUNED_SUFFIX).strip())
                else:
                    lines.append(f"[{call.name}] {_cut(call.arguments, 80)}")
    return lines
