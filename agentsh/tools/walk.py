"""The file walk the search tools and the checkpoints share: the tree as a developer sees it.

Hidden files are included, ``.git`` is skipped, ``.gitignore`` files (nested ones and
``.git/info/exclude`` too) are honoured with git's precedence (a deeper file wins), and symlinks
are listed but not followed. Globs follow gitignore's syntax (``**``, ``{a,b}``, character
classes), compiled once to regular expressions.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentsh.fsutil import read_regular

#: more ``{a,b}`` alternatives than this and the braces are taken literally: each group doubles
#: the count, and ``{a,b}`` twenty times over is a million regexes
MAX_BRACE_ALTERNATIVES = 64
# An ignore file is read up to this size (patterns past it are not applied: more is listed).
_IGNORE_FILE_BYTES = 4 * 1024 * 1024


def _expand_braces(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` -> ``*.ts``, ``*.tsx`` (innermost group first, so nesting works)."""
    out = _expanded(pattern)
    return out if len(out) <= MAX_BRACE_ALTERNATIVES else [pattern]


def _expanded(pattern: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None or "," not in match[1]:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    out: list[str] = []
    for option in match[1].split(","):
        out += _expanded(head + option + tail)
        if len(out) > MAX_BRACE_ALTERNATIVES:
            break
    return out


def _glob_body(pattern: str) -> str:
    """The regex for a gitignore-style glob: ``*``/``?`` stay in one folder, ``**`` crosses.

    Globs come from files someone else wrote (a cloned repository's ``.gitignore``), so no
    text may make a match slow: ``**/**/.../a`` or ``*a*a*...*b`` written plainly as regexes
    backtrack for minutes on one path. So a run of ``**`` counts once, and what sits between
    two wildcards is matched at the earliest place it can be, in an atomic group (fnmatch's
    trick): a later place could never match more, as the wildcard after it can cover the gap.
    """
    parts: list[str] = []
    for part in pattern.split("/"):
        if not (part == "**" and parts and parts[-1] == "**"):
            parts.append(part)
    if "**" not in parts:
        return "/".join(_component(part) for part in parts)
    groups: list[list[str]] = [[]]
    for part in parts:
        if part == "**":
            groups.append([])
        else:
            groups[-1].append(part)
    head, *middle, tail = groups
    out = "".join(_component(part) + "/" for part in head)
    for group in middle:  # between two '**': the earliest folders that match
        out += "(?>(?:[^/]*/)*?" + "/".join(_component(part) for part in group) + "/)"
    if not tail:
        return out + ".*"  # a trailing '**': everything below
    return out + "(?:[^/]*/)*?" + "/".join(_component(part) for part in tail)


def _component(part: str) -> str:
    """One name of a glob (no ``/``): ``*`` and ``?`` never leave it; every ``*`` but the last
    finds the earliest place the text up to the next one matches (see :func:`_glob_body`)."""
    segments: list[list[str]] = [[]]
    i = 0
    n = len(part)
    while i < n:
        c = part[i]
        if c == "*":
            if segments[-1] or len(segments) == 1:
                segments.append([])  # a run of '*' is one
            i += 1
        elif c == "?":
            segments[-1].append("[^/]")
            i += 1
        elif c == "[":
            negated = part[i + 1 : i + 2] in ("!", "^")
            first = i + 2 if negated else i + 1
            close = part.find("]", first + 1)  # a ']' right after '[' is a member
            if close < 0:
                segments[-1].append(re.escape(c))
                i += 1
                continue
            members = "".join(ch if ch == "-" else re.escape(ch) for ch in part[first:close])
            # A negated class never matches '/' either: '*' and '?' stay in one name.
            segments[-1].append(f"[^/{members}]" if negated else f"[{members}]")
            i = close + 1
        elif c == "\\" and i + 1 < n:
            segments[-1].append(re.escape(part[i + 1]))
            i += 2
        else:
            segments[-1].append(re.escape(c))
            i += 1
    if len(segments) == 1:
        return "".join(segments[0])
    lead, *between, last = ("".join(segment) for segment in segments)
    return lead + "".join(f"(?>[^/]*?{text})" for text in between) + "[^/]*" + last


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
    # A repository's ignore file may be a FIFO or a link to a device: read_regular refuses
    # both without blocking (a plain open() of a FIFO waits forever for a writer).
    data = read_regular(path, _IGNORE_FILE_BYTES)
    if data is None:
        return None
    rules = IgnoreFile.parse(base, data.decode("utf-8", "replace"))
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
    git. Directories that are ignored are not entered at all; symlinks are not followed. The
    walk keeps a stack of the folders it is in rather than recursing, so no depth of nesting
    (PATH_MAX bounds it) reaches Python's recursion limit.
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
        # Depth first with a stack of open folders, not a call per level: a cloned project
        # with folders nested deeper than Python's recursion limit is walked like any other.
        frames: list[_Frame] = []
        top = self._enter(self.root, prefix, "", stack)
        if top is not None:
            frames.append(top)
        while frames:
            if self.stop.is_set():
                return
            frame = frames[-1]
            entry = next(frame.entries, None)
            if entry is None:
                frames.pop()
                continue
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
            child_anchored = f"{frame.anchored}/{name}" if frame.anchored else name
            if _ignored(frame.stack, child_anchored, is_dir):
                continue
            child_rel = f"{frame.rel}/{name}" if frame.rel else name
            yield Entry(Path(entry.path), child_rel, is_dir, is_symlink)
            if is_dir:
                child = self._enter(Path(entry.path), child_anchored, child_rel, frame.stack)
                if child is not None:
                    frames.append(child)

    def _enter(
        self, folder: Path, anchored: str, rel: str, stack: list[IgnoreFile]
    ) -> _Frame | None:
        """The sorted entries of ``folder`` with the ignore rules that apply in it."""
        if self.stop.is_set():
            return None
        local = _read_ignore(folder / ".gitignore", anchored)
        if local:
            stack = [*stack, local]
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return None  # unreadable folders are skipped, as rg and fd do
        return _Frame(iter(entries), anchored, rel, stack)


@dataclass(slots=True)
class _Frame:
    """A folder being walked: its entries still to visit and where it sits."""

    entries: Iterator[os.DirEntry[str]]
    anchored: str  # POSIX path from the walk's anchor (for the ignore rules)
    rel: str  # POSIX path from the search root
    stack: list[IgnoreFile]


def _ignored(stack: list[IgnoreFile], rel: str, is_dir: bool) -> bool:
    for rules in reversed(stack):  # deeper ignore files take precedence
        verdict = rules.verdict(rel, is_dir)
        if verdict is not None:
            return verdict
    return False
