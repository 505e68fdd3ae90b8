"""The ``read`` tool: numbered line ranges of a text file, streamed.

``read`` never loads a whole file: it sniffs the start for binary content, reads line by line
up to the line and byte budgets of :class:`~agentsh.config.ToolSettings`, then only counts the
remaining lines, so a multi-gigabyte log costs a page and a newline count. With a
:class:`~agentsh.tools.host.ToolHost` (an editor over ACP) the page comes from the editor's
buffer, unsaved changes included.
"""

from __future__ import annotations

import asyncio
import codecs
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar

from agentsh.tools.base import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolResult,
    cut_bytes,
    display_path,
    format_size,
    param,
    resolve_path,
)
from agentsh.tools.file_access import (
    error_result,
    held_bytes,
    no_link_out,
    regular_file,
    sniff_binary,
)

_BOM = codecs.BOM_UTF8


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
    output_origin: ClassVar[str] = "read from a file"
    description: ClassVar[str] = (
        "Read a text file with line numbers. Long files come in pages: the result says which "
        "offset reads on. Use offset/limit for a range."
    )
    Params: ClassVar[type[Any]] = ReadParams

    def read_paths(self, params: ReadParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path, ctx.cwd)]

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
            no_link_out(path, ctx.project.root, ctx.cwd)
            regular_file(path, ctx.cwd)
            held = await held_bytes(path, ctx)
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
            return error_result(exc, shown)
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
