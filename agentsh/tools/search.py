"""The search tools: ``grep`` (content), ``find`` (names by glob), ``ls`` (one folder).

``grep`` uses ripgrep in JSON mode when ``rg`` is on PATH and otherwise a Python search that
gives the same answers for common patterns; ``find`` is Python. Both walk the tree the way a
developer expects: hidden files included, ``.git`` skipped, ``.gitignore`` files (nested ones
and ``.git/info/exclude`` too) honoured, symlinks listed but not followed (that walk is
:mod:`agentsh.tools.walk`). Every result is capped by :class:`~agentsh.config.ToolSettings`
and, when capped, says how to narrow the search.
Paths in results are relative to the working folder, so they can be passed to ``read`` as is.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, TypeVar

from agentsh.config import ToolSettings
from agentsh.errors import AgentshError
from agentsh.fsutil import open_regular
from agentsh.programs import find_program
from agentsh.tools.base import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolError,
    ToolResult,
    display_path,
    format_size,
    missing_path_message,
    param,
    resolve_path,
    truncate_head,
)
from agentsh.tools.file_access import no_link_out
from agentsh.tools.walk import Walker, glob_regex

_T = TypeVar("_T")


def _search_root(raw: str | None, ctx: ToolContext) -> Path:
    path = resolve_path(raw or ".", ctx.cwd)
    if not path.exists():
        raise ToolError(missing_path_message(path, ctx.cwd, what="Path"))
    no_link_out(path, ctx.project.root, ctx.cwd)  # as read: a link out is named, not entered
    return path


def _cap_output(text: str, ctx: ToolContext) -> tuple[str, bool]:
    """Keep the head within the read budget; say so when anything was cut."""
    cut = truncate_head(text, max_lines=10**9, max_bytes=ctx.settings.tools.read_max_bytes)
    if not cut.truncated:
        return text, False
    note = (
        f"\n\n[Output cut at {format_size(ctx.settings.tools.read_max_bytes)} "
        f"({cut.kept_lines} of {cut.total_lines} lines). Narrow the search to see the rest.]"
    )
    return cut.text + note, True


# -- grep -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepParams:
    pattern: str = param("Regular expression to search for (or plain text with literal).")
    path: str | None = param("File or folder to search. Default: the working folder.", None)
    glob: str | None = param("Only files matching this glob, e.g. '*.py' or 'src/**/*.ts'.", None)
    ignore_case: bool = param("Match case-insensitively.", False)
    literal: bool = param("Treat pattern as plain text, not a regex.", False)
    context: int = param("Lines of context before and after each match.", 0, minimum=0)


@dataclass(slots=True)
class _GrepOut:
    """Collects matches and context lines into ``path:line: text`` output, in order."""

    cwd: Path
    max_matches: int
    max_line_chars: int
    context: int
    lines: list[str] = field(default_factory=list)
    matches: int = 0
    more: bool = False
    _last: tuple[str, int] | None = None

    @property
    def full(self) -> bool:
        return self.matches >= self.max_matches

    def add(self, path: str, number: int, text: str, *, is_match: bool) -> None:
        if is_match and self.full:
            self.more = True
            return
        if self._last is not None:
            last_path, last_number = self._last
            if last_path == path and number <= last_number:
                return  # already printed as context of the previous match
            if self.context and (last_path != path or number > last_number + 1):
                self.lines.append("--")  # as grep and rg separate groups of context
        self._last = (path, number)
        text = text.rstrip("\r\n")
        if len(text) > self.max_line_chars:
            text = text[: self.max_line_chars] + f"… [line cut at {self.max_line_chars} chars]"
        sep = ":" if is_match else "-"
        self.lines.append(f"{path}{sep}{number}{sep} {text}")
        if is_match:
            self.matches += 1


class GrepTool(Tool):
    name: ClassVar[str] = "grep"
    output_origin: ClassVar[str] = "found in files by grep"
    description: ClassVar[str] = (
        "Search file contents for a regex; prints path:line: text. Honours .gitignore, skips "
        "binary files."
    )
    Params: ClassVar[type[Any]] = GrepParams

    def read_paths(self, params: GrepParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path or ".", ctx.cwd)]

    def __init__(self, *, use_ripgrep: bool = True) -> None:
        self.use_ripgrep = use_ripgrep

    def parse(self, arguments: Any) -> GrepParams:
        params: GrepParams = super().parse(arguments)
        if not params.pattern:
            raise ToolArgumentError("'pattern' must not be empty")
        if params.context < 0:
            raise ToolArgumentError("'context' must be 0 or more")
        return params

    def summary(self, params: GrepParams) -> str:
        text = f"grep: {params.pattern} in {params.path or '.'}"
        return text + (f" ({params.glob})" if params.glob else "")

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        tools = ctx.settings.tools
        try:
            root = _search_root(params.path, ctx)
            out = _GrepOut(
                ctx.cwd, tools.grep_max_matches, tools.grep_max_line_chars, params.context
            )
            rg = find_program("rg") if self.use_ripgrep else None
            if rg is not None:
                try:
                    await _grep_rg(rg, params, root, out, ctx)
                except _RgFailed:
                    rg = None
            if rg is None:
                regex = _compile(params)
                stop = threading.Event()
                await _off_loop(
                    lambda: _grep_python(regex, params, root, out, stop, tools), ctx, stop
                )
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        if ctx.cancelled.is_set():
            return ToolResult("grep was cancelled.", is_error=True)
        where = display_path(root, ctx.cwd)
        if not out.matches:
            glob = f" (files matching {params.glob})" if params.glob else ""
            return ToolResult(f"No matches for {params.pattern!r} in {where}{glob}.")
        text, cut = _cap_output("\n".join(out.lines), ctx)
        if out.more:
            text += (
                f"\n\n[Showing the first {out.max_matches} matches; there are more. Narrow the "
                f"pattern, path or glob to see the rest.]"
            )
        details = {"matches": out.matches, "more": out.more, "engine": "rg" if rg else "python"}
        return ToolResult(text, truncated=cut or out.more, details=details)


async def _off_loop(work: Callable[[], _T], ctx: ToolContext, stop: threading.Event) -> _T | None:
    """``work()`` run in a thread of its own; None as soon as ``ctx.cancelled`` is set.

    On cancel the thread is told to ``stop`` (the walk checks between files and lines) but
    never waited for: one blocked in a read that never returns (a hung network mount) would
    hold Esc up forever. It is a daemon thread, so it does not hold up agentsh's exit either.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()

    def deliver(outcome: Callable[[], None]) -> None:
        def run() -> None:
            if not done.done():  # else cancelled: nobody waits for it
                outcome()

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(run)

    def target() -> None:
        try:
            result = work()
        except Exception as exc:  # noqa: BLE001 (raised again in the awaiting task)
            deliver(functools.partial(done.set_exception, exc))
        else:
            deliver(functools.partial(done.set_result, result))

    threading.Thread(target=target, name=f"agentsh-{ctx.call_id}", daemon=True).start()
    cancelled = asyncio.create_task(ctx.cancelled.wait())
    try:
        waiters: set[asyncio.Future[Any]] = {done, cancelled}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.set()
        cancelled.cancel()
        finished = done.done()
        if not finished:  # stopped, or this task cancelled: the thread's outcome goes nowhere
            done.cancel()
    return done.result() if finished else None


def _compile(params: GrepParams) -> re.Pattern[str]:
    source = re.escape(params.pattern) if params.literal else params.pattern
    try:
        return re.compile(source, re.IGNORECASE if params.ignore_case else 0)
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression {params.pattern!r}: {exc}. Set literal=true to "
            f"search for the text as written."
        ) from None


def _grep_python(
    regex: re.Pattern[str],
    params: GrepParams,
    root: Path,
    out: _GrepOut,
    stop: threading.Event,
    tools: ToolSettings,
) -> None:
    glob = glob_regex(params.glob) if params.glob else None
    sniff = tools.binary_sniff_bytes
    if root.is_file():  # the file named (through a link too, as read does)
        _grep_file(open_regular(root), root, regex, params.context, out, stop, sniff)
        return
    for entry in Walker(root, stop):
        if stop.is_set() or out.more:
            return
        if entry.is_dir or entry.is_symlink or (glob is not None and not glob.match(entry.rel)):
            continue
        # Listed as a file, opened as one: a name made a FIFO since is not opened blocking.
        file = open_regular(entry.path, follow_links=False)
        _grep_file(file, entry.path, regex, params.context, out, stop, sniff)


def _grep_file(
    file: BinaryIO | None,
    path: Path,
    regex: re.Pattern[str],
    context: int,
    out: _GrepOut,
    stop: threading.Event,
    sniff: int,
) -> None:
    """Search one opened file (None: not a regular file, skipped)."""
    if file is None:
        return
    try:
        with file as f:
            if b"\x00" in f.read(sniff):
                return  # binary: rg skips these too
            f.seek(0)
            shown = display_path(path, out.cwd)
            before: deque[tuple[int, str]] = deque(maxlen=context)
            after = 0
            for number, raw in enumerate(f, start=1):
                if number % 4096 == 0 and stop.is_set():
                    return
                text = raw.decode("utf-8", "replace")
                if regex.search(text.rstrip("\r\n")):
                    if out.full:
                        out.more = True
                        return
                    for n, t in before:
                        out.add(shown, n, t, is_match=False)
                    before.clear()
                    out.add(shown, number, text, is_match=True)
                    after = context
                elif after:
                    out.add(shown, number, text, is_match=False)
                    after -= 1
                elif context:
                    before.append((number, text))
    except OSError:
        return


async def _grep_rg(
    rg: str, params: GrepParams, root: Path, out: _GrepOut, ctx: ToolContext
) -> None:
    args = [rg, "--json", "--hidden", "--no-require-git", "--glob=!.git", "--sort=path"]
    if params.ignore_case:
        args.append("--ignore-case")
    else:
        args.append("--case-sensitive")
    if params.literal:
        args.append("--fixed-strings")
    if params.glob:
        args += ["--glob", params.glob]
    if params.context:
        args += ["--context", str(params.context)]
    args += ["--regexp", params.pattern, "--", str(root)]
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=64 * 1024 * 1024,  # one JSON line holds a whole matched line
    )
    assert proc.stdout is not None and proc.stderr is not None
    cancelled = asyncio.create_task(ctx.cancelled.wait())
    stderr_task = asyncio.create_task(proc.stderr.read())
    try:
        complete = False  # read to the end, rather than stopped early
        while not out.more:
            line_task = asyncio.create_task(proc.stdout.readline())
            await asyncio.wait({line_task, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not line_task.done():
                line_task.cancel()
                break
            try:
                line = line_task.result()
            except ValueError:  # a matched line over the reader's 64 MiB limit
                break
            if not line:
                complete = True
                break
            _rg_event(line, out)
    finally:
        cancelled.cancel()
        if not complete and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace").strip()
    if complete and proc.returncode == 2 and not out.matches:
        raise _RgFailed(stderr)


class _RgFailed(AgentshError):
    """ripgrep gave up without a match: most often a pattern its engine rejects (look-around,
    backreferences), or an rg too old for a flag. The Python search then answers instead."""


def _rg_text(data: dict[str, Any]) -> str:
    if "text" in data:
        return str(data["text"])
    return base64.b64decode(data.get("bytes", "")).decode("utf-8", "replace")


def _rg_event(line: bytes, out: _GrepOut) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return
    kind = event.get("type")
    if kind not in ("match", "context"):
        return
    data = event["data"]
    path = display_path(Path(_rg_text(data["path"])), out.cwd)
    out.add(path, int(data["line_number"]), _rg_text(data["lines"]), is_match=kind == "match")


# -- find -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FindParams:
    pattern: str = param("Glob for names or paths, e.g. '*.py', 'src/**/test_*.py'.")
    path: str | None = param("Folder to search. Default: the working folder.", None)


class FindTool(Tool):
    name: ClassVar[str] = "find"
    output_origin: ClassVar[str] = "listed by find (file names)"
    description: ClassVar[str] = (
        "Find files and folders by glob (names at any depth, or paths with '/'). Honours "
        ".gitignore; folders end with '/'."
    )
    Params: ClassVar[type[Any]] = FindParams

    def read_paths(self, params: FindParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path or ".", ctx.cwd)]

    def parse(self, arguments: Any) -> FindParams:
        params: FindParams = super().parse(arguments)
        if not params.pattern.strip():
            raise ToolArgumentError("'pattern' must not be empty; use '*' for everything")
        return params

    def summary(self, params: FindParams) -> str:
        return f"find: {params.pattern} in {params.path or '.'}"

    async def run(self, params: FindParams, ctx: ToolContext) -> ToolResult:
        limit = ctx.settings.tools.find_max_results
        try:
            root = _search_root(params.path, ctx)
            if not root.is_dir():
                raise ToolError(f"{display_path(root, ctx.cwd)} is a file; find searches folders.")
            stop = threading.Event()
            done = await _off_loop(
                lambda: _find(root, params.pattern, limit, stop, ctx.cwd), ctx, stop
            )
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        if done is None or ctx.cancelled.is_set():
            return ToolResult("find was cancelled.", is_error=True)
        found, total = done
        where = display_path(root, ctx.cwd)
        if not found:
            return ToolResult(f"Nothing matches {params.pattern!r} in {where}.")
        text, cut = _cap_output("\n".join(found), ctx)
        more = total > len(found)
        if more:
            text += (
                f"\n\n[Showing the first {len(found)} of {total} results. Use a more specific "
                f"pattern or path to see the rest.]"
            )
        return ToolResult(text, truncated=cut or more, details={"results": total})


def _find(
    root: Path, pattern: str, limit: int, stop: threading.Event, cwd: Path
) -> tuple[list[str], int]:
    regex = glob_regex(pattern)
    found: list[str] = []
    total = 0
    for entry in Walker(root, stop):
        if regex.match(entry.rel):
            total += 1
            if len(found) < limit:
                found.append(display_path(entry.path, cwd) + ("/" if entry.is_dir else ""))
    return found, total


# -- ls -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LsParams:
    path: str | None = param("Folder to list. Default: the working folder.", None)


class LsTool(Tool):
    name: ClassVar[str] = "ls"
    output_origin: ClassVar[str] = "listed by ls (file names)"
    description: ClassVar[str] = (
        "List a folder's entries, sorted, dotfiles included; folders end with '/'."
    )
    Params: ClassVar[type[Any]] = LsParams

    def read_paths(self, params: LsParams, ctx: ToolContext) -> list[Path]:
        return [resolve_path(params.path or ".", ctx.cwd)]

    def summary(self, params: LsParams) -> str:
        return f"ls: {params.path or '.'}"

    async def run(self, params: LsParams, ctx: ToolContext) -> ToolResult:
        limit = ctx.settings.tools.ls_max_entries
        try:
            root = _search_root(params.path, ctx)
            names = await asyncio.to_thread(_list, root, ctx.cwd)
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        where = display_path(root, ctx.cwd)
        if not names:
            return ToolResult(f"{where} is empty.", details={"entries": 0})
        shown = names[:limit]
        text, cut = _cap_output("\n".join(shown), ctx)
        more = len(names) > limit
        if more:
            text += (
                f"\n\n[Showing {limit} of {len(names)} entries. Use find with a pattern "
                f"(e.g. pattern='*.py', path={where!r}) or ls a subfolder to narrow.]"
            )
        return ToolResult(text, truncated=cut or more, details={"entries": len(names)})


def _list(root: Path, cwd: Path) -> list[str]:
    shown = display_path(root, cwd)
    if not root.is_dir():
        raise ToolError(f"{shown} is a file, not a folder. Use read to see it.")
    try:
        with os.scandir(root) as it:
            entries = list(it)
    except PermissionError:
        raise ToolError(f"Permission denied: {shown}.") from None
    except OSError as exc:
        raise ToolError(f"Cannot list {shown}: {exc.strerror or exc}.") from None
    names: list[str] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()  # a symlink to a folder lists as a folder
        except OSError:
            is_dir = False
        names.append(entry.name + ("/" if is_dir else ""))
    names.sort(key=lambda name: (name.lower(), name))
    return names
