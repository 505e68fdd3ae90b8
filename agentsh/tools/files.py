"""The file tools: ``read`` (numbered line ranges, streamed), ``write`` and ``edit`` (with diffs).

``read`` never loads a whole file: it sniffs the start for binary content, reads line by line
up to the line and byte budgets of :class:`~agentsh.config.ToolSettings`, then only counts the
remaining lines, so a multi-gigabyte log costs a page and a newline count. ``write`` and
``edit`` keep what the model cannot see and must not break (a UTF-8 BOM, CRLF line endings,
the mode, the bytes outside the replaced span), write through the one durable atomic write (a
full disk leaves the old file whole, never a torn one), and return a unified diff in
``details["diff"]``. Each one
also plans its change without writing, which is what the approval prompt shows.

With a :class:`~agentsh.tools.host.ToolHost` (an editor over ACP), the text of a file in the
session's folder comes from the editor, unsaved changes included, and the write goes back
through it; the checks and the plan are the same, only the bytes travel another way.
"""

from __future__ import annotations

import asyncio
import codecs
import difflib
import io
import os
import re
import stat
import unicodedata
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from agentsh.fsutil import atomic_write
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolResult,
    cut_bytes,
    display_path,
    format_size,
    missing_path_message,
    param,
    resolve_path,
    truncate_head,
)
from agentsh.tools.host import hosted_path

_BOM = codecs.BOM_UTF8

# Magic numbers of the binary files a model most often tries to read, for a clearer message.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "zip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
)

# Bytes that text files do not contain (everything below 0x20 but tab, LF, FF, CR, ESC, BS).
_CONTROL_BYTES = frozenset(range(32)) - {8, 9, 10, 12, 13, 27}

# A file that is not UTF-8 is still shown (with U+FFFD for the bad bytes) when it reads like
# text in a legacy 8-bit encoding: few control bytes, and bad bytes scattered among ASCII (an
# accented letter here and there), not making up a large share of it.
_CONTROL_RATIO = 0.10
_UNDECODABLE_RATIO = 0.30

# Bounds on work that would otherwise grow with the file: the diff (difflib is quadratic on
# pathological input) and the tolerant match (it keeps two offset arrays per character).
_DIFF_MAX_LINES = 20_000
_TOLERANT_MAX_BYTES = 4 * 1024 * 1024
_CLOSEST_MAX_LINES = 20_000


def sniff_binary(head: bytes) -> str | None:
    """What kind of binary file starts with ``head``, or None when it looks like text."""
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    if b"\x00" in head:
        return "binary data"
    if sum(1 for byte in head if byte in _CONTROL_BYTES) > len(head) * _CONTROL_RATIO:
        return "binary data"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        text = head.decode("utf-8", "replace")
        if text.count("\ufffd") > len(text) * _UNDECODABLE_RATIO:
            return "binary data"
    return None


def os_error_message(exc: OSError, shown: str) -> str:
    """An OSError as a sentence naming the path (no errno numbers, no traceback)."""
    match exc:
        case PermissionError():
            return f"Permission denied: {shown}."
        case IsADirectoryError():
            return f"{shown} is a directory, not a file."
        case NotADirectoryError():
            return f"A part of {shown} is a file, not a folder."
        case FileNotFoundError():
            return f"Not found: {shown}."
        case _:
            return f"Cannot access {shown}: {exc.strerror or exc}."


def _error(exc: ToolError | OSError, shown: str) -> ToolResult:
    text = str(exc) if isinstance(exc, ToolError) else os_error_message(exc, shown)
    return ToolResult(text, is_error=True)


def _regular_file(path: Path, cwd: Path) -> Path:
    """``path`` if it is a regular file; otherwise a ToolError saying what it is instead."""
    shown = display_path(path, cwd)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ToolError(missing_path_message(path, cwd)) from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file. Use ls to list it.")
    if not stat.S_ISREG(mode):
        # A FIFO or a device would block the read forever or never end.
        raise ToolError(f"{shown} is not a regular file (a pipe, socket or device).")
    return path


# -- read -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadParams:
    path: str = param("File path, relative to the working folder or absolute.")
    offset: int | None = param("First line to show, 1-based. Default 1.", None, minimum=1)
    limit: int | None = param("Most lines to show. Default and cap 2000.", None, minimum=1)


@dataclass(frozen=True, slots=True)
class _Page:
    lines: list[str]  # the text of each line shown, without its line ending
    first: int
    total: int
    stopped: str  # "" (reached the end or the caller's limit), "lines", "bytes"
    long_line: int = 0  # size in bytes of a single line shown cut, 0 if none

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


class ReadTool(Tool):
    name: ClassVar[str] = "read"
    description: ClassVar[str] = (
        "Read a text file with line numbers. Long files come in pages: the result says which "
        "offset reads on. Use offset/limit for a range."
    )
    Params: ClassVar[type[Any]] = ReadParams

    def parse(self, arguments: Any) -> ReadParams:
        params: ReadParams = super().parse(arguments)
        if not params.path.strip():
            raise ToolArgumentError("'path' must not be empty")
        if params.offset is not None and params.offset < 1:
            raise ToolArgumentError("'offset' is 1-based: use 1 or more")
        if params.limit is not None and params.limit < 1:
            raise ToolArgumentError("'limit' must be 1 or more")
        return params

    def summary(self, params: ReadParams) -> str:
        if params.offset is None and params.limit is None:
            return f"read: {params.path}"
        start = params.offset or 1
        end = "" if params.limit is None else str(start + params.limit - 1)
        return f"read: {params.path}:{start}-{end}"

    async def run(self, params: ReadParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(params.path, ctx.cwd)
        shown = display_path(path, ctx.cwd)
        tools = ctx.settings.tools
        offset = params.offset or 1
        want = min(params.limit or tools.read_max_lines, tools.read_max_lines)
        try:
            _regular_file(path, ctx.cwd)
            held = await _held_bytes(path, ctx)
            page = await asyncio.to_thread(
                _read_page,
                path,
                shown,
                offset=offset,
                want=want,
                max_bytes=tools.read_max_bytes,
                sniff_bytes=tools.binary_sniff_bytes,
                held=held,
            )
        except (ToolError, OSError) as exc:
            return _error(exc, shown)
        return _page_result(
            page, path, shown, max_lines=tools.read_max_lines, max_bytes=tools.read_max_bytes
        )


def _read_page(
    path: Path,
    shown: str,
    *,
    offset: int,
    want: int,
    max_bytes: int,
    sniff_bytes: int,
    held: bytes | None = None,
) -> _Page:
    with io.BytesIO(held) if held is not None else path.open("rb") as f:
        head = f.read(sniff_bytes)
        kind = sniff_binary(head)
        if kind is not None:
            total = format_size(path.stat().st_size)
            raise ToolError(f"{shown} is a binary file ({kind}, {total}); read shows text only.")
        f.seek(len(_BOM) if head.startswith(_BOM) else 0)
        # Budgeted with the widest number this page can have; formatted with the real one.
        prefix_bytes = len(str(offset + want - 1)) + 1
        cap = max_bytes + 1  # one byte more than fits tells a long line apart
        lines: list[str] = []
        used = 0
        lineno = 0
        while True:
            raw = f.readline(cap)
            if not raw:
                break
            skipped = 0
            if len(raw) == cap and not raw.endswith(b"\n"):
                skipped = _skip_rest_of_line(f)
            lineno += 1
            if lineno < offset:
                continue
            text = _strip_eol(raw.decode("utf-8", "replace"))
            size = prefix_bytes + len(text.encode("utf-8")) + 1
            if used + size > max_bytes:
                long_line = 0
                if not lines:
                    # One line is bigger than a whole page: show its start, never nothing.
                    lines.append(cut_bytes(text, max_bytes - prefix_bytes - 1))
                    long_line = len(raw) + skipped
                # Otherwise this line was read but not shown; the next page starts with it.
                return _Page(lines, offset, lineno + _count_rest(f), "bytes", long_line)
            lines.append(text)
            used += size
            if len(lines) >= want:
                return _Page(lines, offset, lineno + _count_rest(f), "lines")
        if offset > max(lineno, 1):
            raise ToolError(
                f"offset {offset} is past the end of {shown} ({lineno} lines). "
                f"Use an offset from 1 to {max(lineno, 1)}."
            )
        return _Page(lines, offset, lineno, "")


def _strip_eol(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    return text


def _skip_rest_of_line(f: BinaryIO) -> int:
    """Move past the end of the current line; return how many bytes were skipped."""
    skipped = 0
    while chunk := f.read(1 << 16):
        index = chunk.find(b"\n")
        if index >= 0:
            f.seek(index + 1 - len(chunk), 1)
            return skipped + index + 1
        skipped += len(chunk)
    return skipped


def _count_rest(f: BinaryIO) -> int:
    """Lines from the current position to the end, counted in 1 MiB chunks."""
    count = 0
    last = b""
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    if last and last != b"\n":
        count += 1
    return count


def _page_result(
    page: _Page, path: Path, shown: str, *, max_lines: int, max_bytes: int
) -> ToolResult:
    details: dict[str, Any] = {"path": str(path), "total_lines": page.total}
    if page.total == 0:
        return ToolResult(f"[{shown} is empty.]", details=details)
    details |= {"start_line": page.first, "end_line": page.last}
    notes: list[str] = []
    if page.long_line:
        line = page.first
        notes.append(
            f"[Line {line} is {format_size(page.long_line)}, more than one read returns; only "
            f"its start is shown. See the rest with bash, e.g. sed -n '{line}p' {shown} | "
            f"cut -b 40000-80000.]"
        )
    more = page.last < page.total
    by_lines = page.stopped == "lines" and len(page.lines) == max_lines and more
    truncated = page.stopped == "bytes" or by_lines
    if more:
        limit = ""
        if page.stopped == "bytes":
            limit = f" ({format_size(max_bytes)} limit)"
        elif by_lines:
            limit = f" ({max_lines}-line limit)"
        notes.append(
            f"[Showing lines {page.first}-{page.last} of {page.total}{limit}. "
            f"Use offset={page.last + 1} to read on.]"
        )
    width = len(str(page.last))
    body = "\n".join(f"{page.first + i:>{width}}\t{text}" for i, text in enumerate(page.lines))
    content = body + ("\n\n" + "\n".join(notes) if notes else "")
    return ToolResult(content, truncated=truncated, details=details)


# -- shared by write and edit ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Change:
    """A planned write: what is there, what will be, and the diff between the two."""

    path: Path
    shown: str
    existed: bool
    new: bytes
    diff: str
    added: int
    removed: int


def _line_ending(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _with_ending(text: str, ending: str) -> str:
    text = text.replace("\r\n", "\n")
    return text.replace("\n", ending) if ending != "\n" else text


def _diff_lines(text: str) -> list[str]:
    # split("\n"), not splitlines(): form feeds and U+2028 are not line breaks in a source file.
    parts = text.replace("\r\n", "\n").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified_diff(old: str, new: str, name: str, *, created: bool = False) -> tuple[str, int, int]:
    """A unified diff of two texts (line endings ignored), with +/- line counts.

    Common leading and trailing lines are cut before difflib runs and the hunk numbers
    shifted back, so a one-line edit of a large file costs what a small diff costs.
    """
    a, b = _diff_lines(old), _diff_lines(new)
    context = 3
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - context)
    cut_tail = max(0, tail - context)
    a_mid, b_mid = a[start : len(a) - cut_tail], b[start : len(b) - cut_tail]
    if len(a_mid) > _DIFF_MAX_LINES and len(b_mid) > _DIFF_MAX_LINES:
        removed, added = len(a) - head - tail, len(b) - head - tail
        return f"(diff not shown: {removed} lines replaced by {added} lines)\n", added, removed
    out: list[str] = []
    added = removed = 0
    fromfile = "/dev/null" if created else f"a/{name}"
    lines = difflib.unified_diff(a_mid, b_mid, fromfile, f"b/{name}", n=context)
    for index, line in enumerate(lines):
        if index < 2:  # the ---/+++ header
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        if line.startswith("@@"):
            if start:
                line = _HUNK.sub(
                    lambda m: (
                        f"@@ -{int(m[1]) + start}{m[2] or ''} +{int(m[3]) + start}{m[4] or ''} @@"
                    ),
                    line,
                )
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out), added, removed


def _capped_diff(diff: str, max_bytes: int) -> str:
    """The diff kept in details (and so in the session log) stays under the read budget."""
    cut = truncate_head(diff, max_lines=10**9, max_bytes=max_bytes)
    if not cut.truncated:
        return diff
    return f"{cut.text}\n... (diff cut at {format_size(max_bytes)} of {format_size(len(diff))})\n"


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def _held_bytes(path: Path, ctx: ToolContext) -> bytes | None:
    """The file's content as the host holds it (an editor's unsaved buffer), or None when the
    disk is read instead: no host for it, no such regular file, or a binary one (the host
    speaks text; the local sniff decides)."""
    where = hosted_path(path, ctx.cwd, ctx.host, write=False)
    if where is None or ctx.host is None:
        return None
    head = await asyncio.to_thread(_head, path, ctx.settings.tools.binary_sniff_bytes)
    if head is None or sniff_binary(head) is not None:
        return None
    return (await ctx.host.read_text(where)).encode("utf-8")


def _head(path: Path, size: int) -> bytes | None:
    """The start of a regular file; None when there is none at ``path``."""
    if not path.is_file():
        return None
    with path.open("rb") as f:
        return f.read(size)


async def _save(change: _Change, ctx: ToolContext) -> None:
    """Write the change through the host when it serves the file, else to the disk."""
    where = hosted_path(change.path, ctx.cwd, ctx.host, write=True)
    text = _decode(change.new)
    if where is None or ctx.host is None or text is None:
        await asyncio.to_thread(_write_change, change, ctx)
        return
    await ctx.host.write_text(where, text)


def _write_change(change: _Change, ctx: ToolContext) -> None:
    """Replace the file whole or not at all (temp file, fsync, rename: :func:`atomic_write`).

    Inside the project no link on the way is followed (a folder swapped for a symlink after
    the approval makes the write fail, not land elsewhere). The mode is kept; a hard-linked
    file (asked about first) gets a new inode, so its other names keep their content. A
    write outside the project happens only when the user approved exactly that."""
    real = Path(os.path.realpath(change.path))
    real_root = Path(os.path.realpath(ctx.project.root))
    if real != real_root and real.is_relative_to(real_root):
        atomic_write(real, change.new, root=real_root)
        return
    if not ctx.outside_allowed:
        raise ToolError(
            f"{change.shown} now leads outside the project ({real}), which was not approved; "
            "nothing was written."
        )
    real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(real, change.new)


# -- write ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteParams:
    path: str = param("File path to create or overwrite; parent folders are created.")
    content: str = param("The complete new content of the file.")


class WriteTool(Tool):
    name: ClassVar[str] = "write"
    description: ClassVar[str] = (
        "Create or overwrite a file with the given content. Prefer edit for changes to an "
        "existing file."
    )
    Params: ClassVar[type[Any]] = WriteParams

    def parse(self, arguments: Any) -> WriteParams:
        params: WriteParams = super().parse(arguments)
        if not params.path.strip():
            raise ToolArgumentError("'path' must not be empty")
        return params

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EDIT

    def target_paths(self, params: WriteParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path, ctx.cwd)]

    def summary(self, params: WriteParams) -> str:
        return f"write: {params.path}"

    async def approval_detail(self, params: WriteParams, ctx: ToolContext) -> str:
        held = await _held_bytes(resolve_path(params.path, ctx.cwd), ctx)
        change = await asyncio.to_thread(_plan_write, params, ctx, held)
        return _capped_diff(change.diff, ctx.settings.tools.read_max_bytes) or "(no change)"

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(params.path, ctx.cwd)
        shown = display_path(path, ctx.cwd)
        try:
            held = await _held_bytes(path, ctx)
            change = await asyncio.to_thread(_plan_write, params, ctx, held)
            if change.existed and not change.diff:
                return ToolResult(
                    f"{shown} already has this content; nothing changed.",
                    details={"path": str(path), "diff": ""},
                )
            await _save(change, ctx)
        except (ToolError, OSError) as exc:
            return _error(exc, shown)
        lines = len(_diff_lines(params.content))
        size = format_size(len(change.new))
        if change.existed:
            text = f"Overwrote {shown} ({lines} lines, {size}; +{change.added} -{change.removed})."
        else:
            text = f"Created {shown} ({lines} lines, {size})."
        diff = _capped_diff(change.diff, ctx.settings.tools.read_max_bytes)
        return ToolResult(text, details={"path": str(path), "diff": diff})


def _plan_write(params: WriteParams, ctx: ToolContext, held: bytes | None = None) -> _Change:
    """The change ``params`` would make; ``held`` is the file as the host holds it (None: read
    it from the disk)."""
    path = resolve_path(params.path, ctx.cwd)
    shown = display_path(path, ctx.cwd)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path to write.")
    try:
        old = held if held is not None else path.read_bytes()
    except FileNotFoundError:
        old = None
    except NotADirectoryError:
        raise ToolError(f"Cannot create {shown}: a part of its folder path is a file.") from None
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    content = params.content
    if old is None:
        diff, added, removed = unified_diff("", content, shown, created=True)
        return _Change(path, shown, False, content.encode("utf-8"), diff, added, removed)
    old_text = _decode(old)
    if old_text is None:
        diff = f"(replaces a binary or non-UTF-8 file of {format_size(len(old))})\n"
        return _Change(path, shown, True, content.encode("utf-8"), diff, 0, 0)
    bom = old_text.startswith("\ufeff")
    old_body = old_text[1:] if bom else old_text
    # The model writes \n; a CRLF file stays CRLF and a file with a BOM keeps it.
    if _line_ending(old_body) == "\r\n" and "\r\n" not in content:
        content = _with_ending(content, "\r\n")
    if bom and not content.startswith("\ufeff"):
        content = "\ufeff" + content
    new = content.encode("utf-8")
    if new == old:
        return _Change(path, shown, True, new, "", 0, 0)
    diff, added, removed = unified_diff(old_body, content.removeprefix("\ufeff"), shown)
    return _Change(path, shown, True, new, diff, added, removed)


# -- edit -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EditParams:
    path: str = param("File path to edit.")
    old_text: str = param("Exact text to replace; must occur once unless replace_all.")
    new_text: str = param("Replacement text.")
    replace_all: bool = param("Replace every occurrence of old_text.", False)


class EditTool(Tool):
    name: ClassVar[str] = "edit"
    description: ClassVar[str] = (
        "Replace text in a file. old_text must match the file exactly (whitespace included) "
        "and be unique; add surrounding lines to make it unique."
    )
    Params: ClassVar[type[Any]] = EditParams

    def parse(self, arguments: Any) -> EditParams:
        params: EditParams = super().parse(arguments)
        if not params.path.strip():
            raise ToolArgumentError("'path' must not be empty")
        if not params.old_text:
            raise ToolArgumentError("'old_text' must not be empty; use write to create a file")
        return params

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EDIT

    def target_paths(self, params: EditParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path, ctx.cwd)]

    def summary(self, params: EditParams) -> str:
        return f"edit: {params.path}" + (" (all)" if params.replace_all else "")

    async def approval_detail(self, params: EditParams, ctx: ToolContext) -> str:
        held = await _held_bytes(resolve_path(params.path, ctx.cwd), ctx)
        plan = await asyncio.to_thread(_plan_edit, params, ctx, held)
        return _capped_diff(plan.change.diff, ctx.settings.tools.read_max_bytes)

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        path = resolve_path(params.path, ctx.cwd)
        shown = display_path(path, ctx.cwd)
        try:
            held = await _held_bytes(path, ctx)
            plan = await asyncio.to_thread(_plan_edit, params, ctx, held)
            await _save(plan.change, ctx)
        except (ToolError, OSError) as exc:
            return _error(exc, shown)
        count = plan.replacements
        text = (
            f"Edited {shown}: replaced {count} occurrence{'s' if count != 1 else ''} "
            f"(first at line {plan.first_line}; +{plan.change.added} -{plan.change.removed})."
        )
        if plan.tolerant:
            text += (
                " old_text matched only after ignoring differences in trailing whitespace, "
                "Unicode forms, quotes or dashes; re-read the file before the next edit."
            )
        details = {
            "path": str(path),
            "diff": _capped_diff(plan.change.diff, ctx.settings.tools.read_max_bytes),
            "first_changed_line": plan.first_line,
            "replacements": count,
            "tolerant": plan.tolerant,
        }
        return ToolResult(text, details=details)


@dataclass(frozen=True, slots=True)
class _EditPlan:
    change: _Change
    replacements: int
    first_line: int
    tolerant: bool


def _plan_edit(params: EditParams, ctx: ToolContext, held: bytes | None = None) -> _EditPlan:
    """The edit ``params`` would make; ``held`` as for :func:`_plan_write`."""
    path = resolve_path(params.path, ctx.cwd)
    shown = display_path(path, ctx.cwd)
    if params.old_text == params.new_text:
        raise ToolError("old_text and new_text are identical; there is nothing to change.")
    if not path.exists():
        raise ToolError(missing_path_message(path, ctx.cwd) + " To create a file, use write.")
    _regular_file(path, ctx.cwd)
    try:
        data = held if held is not None else path.read_bytes()
    except OSError as exc:
        raise ToolError(os_error_message(exc, shown)) from None
    text = _decode(data)
    if text is None or "\x00" in text:
        raise ToolError(f"{shown} is not UTF-8 text; edit cannot change it safely.")
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    ending = _line_ending(body)
    old = _with_ending(params.old_text, ending)
    new = _with_ending(params.new_text, ending)
    spans = _find_all(body, old)
    tolerant = False
    if not spans:
        if len(data) > _TOLERANT_MAX_BYTES:
            raise ToolError(
                f"Could not find old_text in {shown}. It must match exactly, whitespace "
                f"included (the file is over {format_size(_TOLERANT_MAX_BYTES)}, so no "
                f"approximate match was tried)."
            )
        spans = _find_tolerant(body, params.old_text)
        tolerant = bool(spans)
    if not spans:
        raise ToolError(
            f"Could not find old_text in {shown}. It must match the file exactly, whitespace "
            f"and indentation included; read the file again and copy the text."
            + _closest_hint(body, params.old_text)
        )
    if len(spans) > 1 and not params.replace_all:
        lines = ", ".join(str(body.count("\n", 0, s) + 1) for s, _ in spans[:10])
        raise ToolError(
            f"Found {len(spans)} occurrences of old_text in {shown} (lines {lines}). Add "
            f"surrounding lines to make it unique, or set replace_all=true to change them all."
        )
    pieces: list[str] = []
    pos = 0
    for start, end in spans:
        pieces += [body[pos:start], new]
        pos = end
    pieces.append(body[pos:])
    new_body = "".join(pieces)
    if new_body == body:
        raise ToolError(f"The edit leaves {shown} unchanged; old_text already reads as new_text.")
    new_bytes = (("\ufeff" if bom else "") + new_body).encode("utf-8")
    diff, added, removed = unified_diff(body, new_body, shown)
    first_line = body.count("\n", 0, spans[0][0]) + 1
    change = _Change(path, shown, True, new_bytes, diff, added, removed)
    return _EditPlan(change, len(spans), first_line, tolerant)


def _find_all(haystack: str, needle: str) -> list[tuple[int, int]]:
    """Non-overlapping spans of ``needle`` in ``haystack``, left to right."""
    spans: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start >= 0:
        spans.append((start, start + len(needle)))
        start = haystack.find(needle, start + len(needle))
    return spans


# Typographic characters models and word processors swap for ASCII ones.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_FOLD)


def _fold_with_map(text: str) -> tuple[str, array[int], array[int]]:
    """``text`` folded for a tolerant match, and for each folded character its source span.

    Folding: trailing whitespace of each line dropped (a stray ``\\r`` too), NFKC applied to
    each character with its combining marks, typographic quotes and dashes made ASCII.
    ASCII lines, nearly all of a source file, take the fast path.
    """
    parts: list[str] = []
    starts: array[int] = array("q")
    ends: array[int] = array("q")
    line_start = 0
    size = len(text)
    while True:
        newline = text.find("\n", line_start)
        line_end = size if newline < 0 else newline
        stop = line_end
        while stop > line_start and text[stop - 1].isspace():
            stop -= 1
        segment = text[line_start:stop]
        if segment.isascii():
            parts.append(segment)
            starts.extend(range(line_start, stop))
            ends.extend(range(line_start + 1, stop + 1))
        else:
            i = line_start
            while i < stop:
                j = i + 1
                while j < stop and unicodedata.combining(text[j]):
                    j += 1
                folded = _fold(text[i:j])
                parts.append(folded)
                starts.extend([i] * len(folded))
                ends.extend([j] * len(folded))
                i = j
        if newline < 0:
            break
        parts.append("\n")
        starts.append(newline)
        ends.append(newline + 1)
        line_start = newline + 1
    return "".join(parts), starts, ends


def _fold_plain(text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(_fold(line.rstrip()) for line in lines)


def _find_tolerant(body: str, old_text: str) -> list[tuple[int, int]]:
    needle = _fold_plain(old_text)
    if not needle.strip():
        return []
    folded, starts, ends = _fold_with_map(body)
    return [(starts[s], ends[e - 1]) for s, e in _find_all(folded, needle)]


def _closest_hint(body: str, old_text: str) -> str:
    """`` The closest line is 12: ...`` when a line resembles old_text's first line."""
    first = next((line.strip() for line in old_text.splitlines() if line.strip()), "")
    lines = body.split("\n")
    if not first or len(lines) > _CLOSEST_MAX_LINES:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(first)
    best_ratio, best_index = 0.0, -1
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        matcher.set_seq1(stripped)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_index = ratio, index
    if best_ratio < 0.6:
        return ""
    shown = lines[best_index].rstrip("\r")
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return f" The closest line is {best_index + 1}: {shown!r}"
