"""The facts every compaction keeps by code, whatever tier ran and whatever the model wrote.

A summary model may drop anything; these never depend on it. Each compaction (MoveToWorkspace,
Summarize, Truncate, and a prune-only one) rewrites them from the session itself:

- **Active Task**: the newest user request (the one being worked on now), verbatim within a
  share of the window (:func:`agentsh.context.prompt_budget.request_chars`: 800 characters on
  4k, 6,553 on 32k); a longer one keeps its head and tail with, between them, the archive that
  holds it whole (when its message just left; the model's read tool opens it) and its log entry.
  One that stays in the context verbatim anyway is named, not copied, unless it is short (half
  that share, at most 2,000 characters): a 2,000-character request took 12 % of a 4k window
  twice;
- **Relevant Files**: every file read and modified so far, from the tool calls and from the
  files a ``bash`` command changed (``details["files_changed"]``, see
  :mod:`agentsh.tools.changes`), merged across compactions. The compaction entry records the
  whole lists (oldest first, by last touch); the context shows them newest first within a share
  of the window (:func:`agentsh.context.prompt_budget.files_chars`), counting the rest;
- **Last Error**: the most recent failing command and the tail of its output, verbatim and
  bounded (carried over from the previous summary while no newer failure happens);
- **Archived Turns**: which turns left the context and where they are, as turn ranges with
  file names relative to one workspace folder, consecutive ranges merged and the list bounded.

They are code-owned sections of :class:`agentsh.context.summary.SummaryDoc`; a model's text
under the same headings is overwritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from agentsh.context.prompt_budget import files_chars, request_chars
from agentsh.context.repair import Message
from agentsh.context.summary import (
    ACTIVE_TASK,
    LAST_ERROR,
    RELEVANT_FILES,
    SummaryDoc,
    Template,
    active_task_text,
    fence_for,
    fenced_if_needed,
    files_text,
    unfenced,
)
from agentsh.context.view import ContextEntry
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, ToolResultEntry
from agentsh.values import Role, ToolCall

ERROR_TAIL_LINES = 30
ERROR_TAIL_CHARS = 1_500
REQUEST_COPY_CHARS = 2_000  # a longer request kept verbatim in the context is named, not copied
ARCHIVE_LINES = 6  # lines of the Archived Turns list at most (older ranges merge into one)
_NAMES_SHOWN = 3
FILES_CHANGED = "files_changed"  # the bash result's details key (agentsh.tools.changes)

_READ_TOOLS = frozenset({"read"})
_WRITE_TOOLS = frozenset({"write", "edit"})


@dataclass(frozen=True, slots=True)
class Facts:
    request: str
    files_read: tuple[str, ...]
    files_modified: tuple[str, ...]
    last_error: str
    archived: str
    request_kept: bool = False  # the request stays in the context verbatim
    files_chars: int | None = None  # the file lists' room in the context (None: 100 paths each)
    request_id: str = ""  # the newest request's log entry
    request_chars: int | None = None  # its copy's room (None: an unknown window)
    request_archive: str = ""  # the workspace file that holds it verbatim, when it just left

    def apply(self, doc: SummaryDoc, template: Template) -> None:
        """Write the facts into ``doc`` (over whatever a model wrote under their headings)."""
        text = self.request.strip()
        limit = self.request_chars
        copy_max = REQUEST_COPY_CHARS if limit is None else min(REQUEST_COPY_CHARS, limit // 2)
        if self.request_kept and len(text) > copy_max:
            first = " ".join(text.splitlines()[0].split())[:120]
            doc.sections[ACTIVE_TASK] = (
                f"The user's newest message when this was written, in the conversation below "
                f'({len(text):,} characters, kept there verbatim; it begins "{first}").'
            )
        elif text:
            doc.sections[ACTIVE_TASK] = fenced_if_needed(
                bounded_request(text, limit, self.request_id, self.request_archive)
            )
        if RELEVANT_FILES in template.headings:
            doc.sections[RELEVANT_FILES] = files_text(
                self.files_read, self.files_modified, self.files_chars
            )
        if self.last_error:
            doc.sections[LAST_ERROR] = self.last_error
        else:
            doc.sections.pop(LAST_ERROR, None)
        doc.pointers = [self.archived] if self.archived else []


# -- files ------------------------------------------------------------------------------------


def relative(path: str, root: str) -> str:
    """``path`` relative to the project ``root`` when it lies under it, else as given."""
    if not root or not path.startswith("/"):
        return path
    try:
        return str(PurePosixPath(path).relative_to(root)) or "."
    except ValueError:
        return path


def files_touched(entries: Iterable[ContextEntry], root: str = "") -> tuple[list[str], list[str]]:
    """(read, modified) paths from the tool calls in ``entries`` and the files their ``bash``
    commands changed, oldest first by their last touch; failed calls do not count (a failed
    command's changes do)."""
    entries = list(entries)
    failed = {e.tool_call_id for e in entries if isinstance(e, ToolResultEntry) and e.is_error}
    read: list[str] = []
    modified: list[str] = []
    for entry in entries:
        if isinstance(entry, ToolResultEntry):
            changed = (entry.details or {}).get(FILES_CHANGED)
            if isinstance(changed, list):
                _add(modified, (str(p) for p in changed if isinstance(p, str) and p), root)
            continue
        if not isinstance(entry, MessageEntry):
            continue
        for call in entry.tool_calls:
            if call.id in failed or call.name not in _READ_TOOLS | _WRITE_TOOLS:
                continue
            args = call.parsed_arguments()
            path = args.get("path") or args.get("file_path") or args.get("file")
            if isinstance(path, str) and path:
                _add(read if call.name in _READ_TOOLS else modified, (path,), root)
    return read, modified


def _add(target: list[str], paths: Iterable[str], root: str) -> None:
    """Append each path, moving one already there to the end (its newest touch)."""
    for path in paths:
        shown = relative(path, root)
        if shown in target:
            target.remove(shown)
        target.append(shown)


def _by_last_touch(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` without repeats, each where it last occurs (oldest first, newest last)."""
    return tuple(reversed(dict.fromkeys(reversed(list(paths)))))


def merge_files(
    previous_read: Sequence[str],
    previous_modified: Sequence[str],
    new_read: Sequence[str],
    new_modified: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Cumulative lists, oldest first by last touch (the new ones are the newer); a file both
    read and modified is listed as modified only."""
    modified = _by_last_touch([*previous_modified, *new_modified])
    chosen = set(modified)
    read = tuple(p for p in _by_last_touch([*previous_read, *new_read]) if p not in chosen)
    return read, modified


# -- the newest request and the last error ----------------------------------------------------


def newest_request(entries: Sequence[ContextEntry], previous: SummaryDoc) -> tuple[str, str]:
    """The newest user request and its entry id ("" when it comes from the previous summary)."""
    for entry in reversed(entries):
        if isinstance(entry, MessageEntry) and entry.role is Role.USER:
            return entry.content, entry.id
    return unfenced(previous.sections.get(ACTIVE_TASK, "")), ""


def bounded_request(text: str, limit: int | None, entry_id: str = "", archive: str = "") -> str:
    """The request verbatim within ``limit`` characters; past it its head (two thirds) and its
    tail, with where the whole text is between them: the archive file the compaction that took
    its message out wrote (the read tool opens this session's archives without asking; the
    session log, named alone, was out of the model's reach), else its log entry."""
    if limit is None:
        return active_task_text(text)
    copied = _LEFT_OUT.search(text) if not entry_id else None
    if copied is not None:
        return _bounded_copy(text, copied, limit)
    if len(text) <= limit:
        return text
    where = f"user message {entry_id} in the session log" if entry_id else "the session log"
    if archive:
        where = f"in `{archive}`, which the read tool opens ({where})"
    head, tail = limit * 2 // 3, limit // 3
    left_out = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {left_out:,} characters of this request left out here; the "
        f"whole request is {where} ...]\n{text[-tail:]}"
    )


_LEFT_OUT = re.compile(
    r"\n\[\.\.\. ([\d,]+) characters of this request left out here; "
    r"(the whole request is .*?) \.\.\.\]\n",
    re.DOTALL,
)


def _bounded_copy(text: str, note: re.Match[str], limit: int) -> str:
    """A copy :func:`bounded_request` made, read back from the previous summary (the request's
    message left at an earlier compaction): kept as it is, with the note that names the archive
    holding the whole request; cut again around that note only on a smaller window. Cut as a
    new text, a second compaction in the same turn dropped the note, and the copy said the whole
    request was "the session log", out of the model's reach (8k and 128k: from the second
    compaction of a turn on)."""
    head, tail = text[: note.start()], text[note.end() :]
    if len(head) + len(tail) <= limit:
        return text
    keep_head, keep_tail = min(len(head), limit * 2 // 3), min(len(tail), limit // 3)
    left_out = int(note.group(1).replace(",", "")) + len(head) + len(tail) - keep_head - keep_tail
    end = tail[len(tail) - keep_tail :]
    return (
        f"{head[:keep_head]}\n[... {left_out:,} characters of this request left out here; "
        f"{note.group(2)} ...]\n{end}"
    )


def _failed(entry: ToolResultEntry) -> bool:
    code = (entry.details or {}).get("exit_code")
    return entry.is_error or (isinstance(code, int) and code != 0)


def _what_ran(call: ToolCall | None, result: ToolResultEntry) -> str:
    if call is None:
        return f"`{result.tool_name or 'tool'}`"
    args = call.parsed_arguments()
    command = args.get("command") or args.get("cmd")
    if isinstance(command, str) and command.strip():
        return f"`{' '.join(command.split())[:300]}` ({call.name})"
    path = args.get("path") or args.get("file_path")
    target = f" {path}" if isinstance(path, str) and path else ""
    return f"`{call.name}{target}`"


def error_tail(text: str) -> str:
    """The end of an error output: at most 30 lines and 1,500 characters, verbatim."""
    lines = text.rstrip("\n").splitlines()
    tail = "\n".join(lines[-ERROR_TAIL_LINES:])
    if len(tail) > ERROR_TAIL_CHARS:
        tail = tail[-ERROR_TAIL_CHARS:]
        cut = tail.find("\n")
        tail = tail[cut + 1 :] if 0 <= cut < 200 else tail
    return tail


def last_error(entries: Sequence[ContextEntry], previous: SummaryDoc) -> str:
    """The newest failing tool call in ``entries`` rendered with its output's tail; else the
    previous summary's, so an error survives any number of compactions until a newer one."""
    calls = {c.id: c for e in entries if isinstance(e, MessageEntry) for c in e.tool_calls}
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if not isinstance(entry, ToolResultEntry) or not _failed(entry):
            continue
        call = calls.get(entry.tool_call_id)
        code = (entry.details or {}).get("exit_code")
        ending = f"exit {code}" if isinstance(code, int) and code else "failed"
        tail = error_tail(entry.content)
        fence = fence_for(tail)
        text = (
            f"{_what_ran(call, entry)} -> {ending}; the end of its output:\n"
            f"{fence}text\n{tail}\n{fence}"
        )
        if call is not None and _passed_later(entries, index, call):
            text += "\n(A later run of the same call succeeded.)"
        return text
    return previous.sections.get(LAST_ERROR, "")


def _passed_later(entries: Sequence[ContextEntry], index: int, failed: ToolCall) -> bool:
    calls = {c.id: c for e in entries if isinstance(e, MessageEntry) for c in e.tool_calls}
    for entry in entries[index + 1 :]:
        if isinstance(entry, ToolResultEntry) and not _failed(entry):
            call = calls.get(entry.tool_call_id)
            if call is not None and (call.name, call.arguments) == (
                failed.name,
                failed.arguments,
            ):
                return True
    return False


# -- what the message cap leaves out ----------------------------------------------------------


def dropped_facts(
    entries: Sequence[ContextEntry], dropped: Sequence[Message], root: str, window: int = 0
) -> str:
    """What the message cap (:func:`agentsh.context.preflight.cap_messages`) took out of a
    request, by code: the files its tool calls read and modified (``bash``'s changed files too,
    newest first within the same share of ``window`` as after a compaction) and its newest
    failing command. The note stays the same while the same messages are out, so
    the request's start does not change from one request to the next."""
    ids = {m.get("tool_call_id") for m in dropped if m.get("role") == "tool"}
    for message in dropped:
        ids.update(c.get("id") for c in message.get("tool_calls") or () if isinstance(c, dict))
    ids.discard(None)
    if not ids:
        return ""
    out = [
        e
        for e in entries
        if (isinstance(e, ToolResultEntry) and e.tool_call_id in ids)
        or (isinstance(e, MessageEntry) and any(c.id in ids for c in e.tool_calls))
    ]
    read, modified = files_touched(out, root)
    parts = []
    if read or modified:
        chosen = set(modified)
        parts.append(
            "Files they touched:\n"
            + files_text([p for p in read if p not in chosen], modified, files_chars(window))
        )
    error = last_error(out, SummaryDoc())
    if error:
        parts.append(f"The newest failing command among them: {error}")
    return "\n".join(parts)


# -- archived turns ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """Turns ``first``..``last`` (1-based, on the path) that left the context into ``files``
    (and, when summarized, verbatim into ``archives``)."""

    first: int
    last: int
    files: tuple[str, ...]
    summarized: bool | None  # None: some were summarized, some archived (merged old ranges)
    archives: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pending:
    """The compaction being written: its first kept entry, its file, whether that file is a
    summary, and the verbatim archive beside a summary ("" for none)."""

    first_kept_id: str
    where: str
    summarized: bool
    archive: str = ""


def archived_spans(path: Sequence[AnyEntry], pending: Pending | None = None) -> list[Span]:
    """The turn ranges each compaction on ``path`` took out of the context, oldest first.

    ``pending`` is the compaction being written now. A prune-only compaction (it kept the
    previous first kept entry) takes nothing out.
    """
    turn_at: list[int] = []
    position: dict[str, int] = {}
    turn = 0
    for index, entry in enumerate(path):
        if isinstance(entry, MessageEntry) and entry.role is Role.USER:
            turn += 1
        turn_at.append(turn)
        position[entry.id] = index
    cuts = [
        Pending(
            e.first_kept_id,
            e.workspace_file,
            e.workspace_file.endswith("-summary.md"),
            e.archive_file,
        )
        for e in path
        if isinstance(e, CompactionEntry)
    ]
    if pending is not None:
        cuts.append(pending)
    spans: list[Span] = []
    kept_from = 0
    for cut in cuts:
        at = position.get(cut.first_kept_id)
        if at is None or at <= kept_from:
            continue
        if cut.where:
            first = max(1, turn_at[kept_from])
            last = max(first, turn_at[at - 1])
            archives = (cut.archive,) if cut.archive else ()
            spans.append(Span(first, last, (cut.where,), cut.summarized, archives))
        kept_from = at
    return spans


def _merge(spans: Sequence[Span]) -> list[Span]:
    merged: list[Span] = []
    for span in spans:
        if merged and merged[-1].summarized == span.summarized:
            last = merged[-1]
            merged[-1] = Span(
                last.first,
                span.last,
                (*last.files, *span.files),
                span.summarized,
                (*last.archives, *span.archives),
            )
        else:
            merged.append(span)
    if len(merged) > ARCHIVE_LINES:
        old = merged[: len(merged) - ARCHIVE_LINES + 1]
        files = tuple(f for s in old for f in s.files)
        archives = tuple(f for s in old for f in s.archives)
        kinds = {s.summarized for s in old}
        summarized = kinds.pop() if len(kinds) == 1 else None
        merged = [
            Span(old[0].first, old[-1].last, files, summarized, archives),
            *merged[len(old) :],
        ]
    return merged


def file_name(where: str) -> str:
    """A workspace file's name, as the pointers show it (``003-archive.md``)."""
    return where.rsplit("/", 1)[-1].removeprefix("memory:")


def _names(files: Sequence[str]) -> str:
    names = [f"`{file_name(f)}`" for f in files]
    if len(names) <= _NAMES_SHOWN:
        return ", ".join(names)
    return f"{names[0]} ... {names[-1]} ({len(names)} files)"


def render_archived(spans: Sequence[Span]) -> str:
    """The Archived Turns body: one folder, then one line per merged range."""
    if not spans:
        return ""
    folders = {f.rsplit("/", 1)[0] for s in spans for f in s.files if "/" in f}
    if len(folders) == 1:
        head = f"Turns that left the context are in files under `{folders.pop()}/`:"
    else:
        head = "Turns that left the context:"
    lines = [head]
    for span in _merge(spans):
        turns = f"turn {span.first}"
        if span.last > span.first:
            turns = f"turns {span.first}-{span.last}"
        verbatim = f"; verbatim in {_names(span.archives)}" if span.archives else ""
        if span.summarized is None:
            lines.append(
                f"- {turns}: archived verbatim or summarized in {_names(span.files)}{verbatim}"
            )
        elif span.summarized:
            lines.append(
                f"- {turns}: summarized above (also saved as {_names(span.files)}){verbatim}"
            )
        else:
            lines.append(f"- {turns}: verbatim in {_names(span.files)}")
    return "\n".join(lines)


def gather(
    *,
    path: Sequence[AnyEntry],
    entries: Sequence[ContextEntry],
    previous: CompactionEntry | None,
    previous_doc: SummaryDoc,
    pending: Pending | None,
    root: str,
    kept_from: int = 0,
    window: int = 0,
) -> Facts:
    """The facts for a compaction about to be written. ``entries`` is the whole context as it
    stands (what leaves and what stays), ``entries[kept_from:]`` what stays; ``pending`` is the
    new cut (see :func:`archived_spans`), None for a prune-only compaction; ``window`` (tokens,
    0: unknown) bounds the file lists shown."""
    read, modified = files_touched(entries, root)
    files_read, files_modified = merge_files(
        previous.files_read if previous else (),
        previous.files_modified if previous else (),
        read,
        modified,
    )
    kept = any(isinstance(e, MessageEntry) and e.role is Role.USER for e in entries[kept_from:])
    request, request_id = newest_request(entries, previous_doc)
    return Facts(
        request=request,
        request_id=request_id,
        request_chars=request_chars(window),
        files_read=files_read,
        files_modified=files_modified,
        last_error=last_error(entries, previous_doc),
        archived=render_archived(archived_spans(path, pending)),
        request_kept=kept,
        files_chars=files_chars(window),
    )
