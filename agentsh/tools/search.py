"""The search tools: ``grep`` (content), ``find`` (names by glob), ``ls`` (one folder).

``grep`` uses ripgrep in JSON mode when ``rg`` is on PATH and otherwise a Python search that
gives the same answers for common patterns; ``find`` is Python. Both walk the tree the way a
developer expects: hidden files included, ``.git`` skipped, ``.gitignore`` files (nested ones
and ``.git/info/exclude`` too) honoured, symlinks listed but not followed. Every result is
capped by :class:`~agentsh.config.ToolSettings` and, when capped, says how to narrow the search.
Paths in results are relative to the working folder, so they can be passed to ``read`` as is.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
import stat
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from agentsh.config import ToolSettings
from agentsh.errors import AgentshError
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

# -- globs and .gitignore -------------------------------------------------------------------


def _expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` -> ``*.ts``, ``*.tsx`` (innermost group first, so nesting works)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None or "," not in match[1]:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    out: list[str] = []
    for option in match[1].split(","):
        out += _expand_braces(head + option + tail)
    return out


def _glob_body(pattern: str) -> str:
    """The regex for a gitignore-style glob: ``*``/``?`` stay in one folder, ``**`` crosses."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n and (i == 0 or pattern[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            negated = pattern[i + 1 : i + 2] in ("!", "^")
            first = i + 2 if negated else i + 1
            close = pattern.find("]", first + 1)  # a ']' right after '[' is a member
            if close < 0:
                out.append(re.escape(c))
                i += 1
                continue
            members = "".join(ch if ch == "-" else re.escape(ch) for ch in pattern[first:close])
            out.append(f"[{'^' if negated else ''}{members}]")
            i = close + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Match a relative POSIX path against a glob the way ripgrep's ``-g`` and fd do.

    A glob without a ``/`` matches the name at any depth (``*.py``); one with a ``/`` matches
    the path from the search folder (``src/**/*.ts``). ``{a,b}`` alternatives are expanded.
    """
    alternatives: list[str] = []
    for option in _expand_braces(pattern):
        option = option.removeprefix("./")
        if "/" in option.rstrip("/"):
            alternatives.append(_glob_body(option.lstrip("/").rstrip("/")))
        else:
            alternatives.append("(?:.*/)?" + _glob_body(option.rstrip("/")))
    return re.compile("^(?:" + "|".join(alternatives) + ")$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ignore file, for paths relative to the folder it sits in."""

    base: str  # POSIX path of its folder from the walk's anchor ("" = the anchor itself)
    rules: tuple[_Rule, ...]

    @classmethod
    def parse(cls, base: str, text: str) -> IgnoreFile:
        rules: list[_Rule] = []
        for raw in text.splitlines():
            line = raw.rstrip("\r")
            if not line or line.startswith("#"):
                continue
            # Trailing spaces are dropped unless escaped with a backslash.
            stripped = line.rstrip(" ")
            if stripped.endswith("\\") and len(stripped) < len(line):
                stripped += " "
            line = stripped
            negated = line.startswith("!")
            if negated or line.startswith(("\\!", "\\#")):
                line = line[1:]  # the '!' of a negation, or the escape of a literal '!'/'#'
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            # With a '/' the pattern is anchored to the ignore file's folder; without, any depth.
            anchored = "/" in line
            body = _glob_body(line.lstrip("/")) if anchored else "(?:.*/)?" + _glob_body(line)
            rules.append(_Rule(re.compile(f"^{body}$", re.DOTALL), negated, dir_only))
        return cls(base, tuple(rules))

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True = ignored, False = re-included, None = no rule here speaks about it."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        for rule in reversed(self.rules):  # the last matching rule wins
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel):
                return not rule.negated
        return None


def _read_ignore(path: Path, base: str) -> IgnoreFile | None:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return None
    rules = IgnoreFile.parse(base, text)
    return rules if rules.rules else None


def _repo_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


@dataclass(frozen=True, slots=True)
class Entry:
    path: Path
    rel: str  # POSIX, relative to the search root
    is_dir: bool
    is_symlink: bool


@dataclass(slots=True)
class Walker:
    """A sorted, depth-first walk that skips ``.git`` and what ``.gitignore`` files ignore.

    Ignore files above the search root (up to the repository root) apply too, as they do in
    git. Directories that are ignored are not entered at all; symlinks are not followed.
    """

    root: Path
    stop: threading.Event = field(default_factory=threading.Event)
    #: folder names never entered nor listed, whatever the ignore files say (checkpoints skip
    #: ``.venv`` and ``node_modules`` even where no .gitignore names them)
    skip_dirs: frozenset[str] = frozenset()

    def __iter__(self) -> Iterator[Entry]:
        anchor = _repo_root(self.root) or self.root
        stack: list[IgnoreFile] = []
        exclude = _read_ignore(anchor / ".git" / "info" / "exclude", "")
        if exclude:
            stack.append(exclude)
        # Ignore files between the repository root and the search root.
        prefix = self.root.relative_to(anchor).as_posix() if self.root != anchor else ""
        folder = anchor
        parts = prefix.split("/") if prefix else []
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            rules = _read_ignore(folder / ".gitignore", base)
            if rules:
                stack.append(rules)
            folder = folder / parts[depth]
        yield from self._walk(self.root, prefix, "", stack)

    def _walk(
        self, folder: Path, anchored: str, rel: str, stack: list[IgnoreFile]
    ) -> Iterator[Entry]:
        if self.stop.is_set():
            return
        local = _read_ignore(folder / ".gitignore", anchored)
        if local:
            stack = [*stack, local]
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # unreadable folders are skipped, as rg and fd do
        for entry in entries:
            if self.stop.is_set():
                return
            name = entry.name
            if name == ".git":
                continue
            try:
                is_symlink = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir and name in self.skip_dirs:
                continue
            child_anchored = f"{anchored}/{name}" if anchored else name
            if _ignored(stack, child_anchored, is_dir):
                continue
            child_rel = f"{rel}/{name}" if rel else name
            yield Entry(Path(entry.path), child_rel, is_dir, is_symlink)
            if is_dir:
                yield from self._walk(Path(entry.path), child_anchored, child_rel, stack)


def _ignored(stack: list[IgnoreFile], rel: str, is_dir: bool) -> bool:
    for rules in reversed(stack):  # deeper ignore files take precedence
        verdict = rules.verdict(rel, is_dir)
        if verdict is not None:
            return verdict
    return False


def _search_root(raw: str | None, ctx: ToolContext) -> Path:
    path = resolve_path(raw or ".", ctx.cwd)
    if not path.exists():
        raise ToolError(missing_path_message(path, ctx.cwd, what="Path"))
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
    description: ClassVar[str] = (
        "Search file contents for a regex; prints path:line: text. Honours .gitignore, skips "
        "binary files."
    )
    Params: ClassVar[type[Any]] = GrepParams

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
            rg = shutil.which("rg") if self.use_ripgrep else None
            if rg is not None:
                try:
                    await _grep_rg(rg, params, root, out, ctx)
                except _RgFailed:
                    rg = None
            if rg is None:
                regex = _compile(params)
                stop = threading.Event()
                worker = asyncio.create_task(
                    asyncio.to_thread(_grep_python, regex, params, root, out, stop, tools)
                )
                await _until_cancelled(worker, ctx, stop)
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


async def _until_cancelled(
    worker: asyncio.Task[None], ctx: ToolContext, stop: threading.Event
) -> None:
    cancelled = asyncio.create_task(ctx.cancelled.wait())
    try:
        await asyncio.wait({worker, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.set()
        cancelled.cancel()
    await worker  # returns soon: the walk checks ``stop`` between files and lines


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
    if root.is_file():
        files: Iterator[Path] = iter([root])
    else:
        files = (
            e.path
            for e in Walker(root, stop)
            if not e.is_dir and not e.is_symlink and (glob is None or glob.match(e.rel))
        )
    for path in files:
        if stop.is_set() or out.more:
            return
        _grep_file(path, regex, params.context, out, stop, tools.binary_sniff_bytes)


def _grep_file(
    path: Path,
    regex: re.Pattern[str],
    context: int,
    out: _GrepOut,
    stop: threading.Event,
    sniff: int,
) -> None:
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            return
        with path.open("rb") as f:
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
    description: ClassVar[str] = (
        "Find files and folders by glob (names at any depth, or paths with '/'). Honours "
        ".gitignore; folders end with '/'."
    )
    Params: ClassVar[type[Any]] = FindParams

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
            worker = asyncio.create_task(
                asyncio.to_thread(_find, root, params.pattern, limit, stop, ctx.cwd)
            )
            cancelled = asyncio.create_task(ctx.cancelled.wait())
            await asyncio.wait({worker, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            cancelled.cancel()
            stop.set()
            found, total = await worker
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        if ctx.cancelled.is_set():
            return ToolResult("find was cancelled.", is_error=True)
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
    description: ClassVar[str] = (
        "List a folder's entries, sorted, dotfiles included; folders end with '/'."
    )
    Params: ClassVar[type[Any]] = LsParams

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
