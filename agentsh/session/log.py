"""The session file on disk: a tolerant reader and a locked, append-only writer.

Durability rules (SPEC §2): every entry is one complete line written with a single ``write``
on an ``O_APPEND`` descriptor, so a kill can only ever tear the *last* line; the reader skips a
torn or damaged line with one problem report and the writer starts its next line on a fresh
line. ``fsync`` happens when the caller says a turn ended and on close (or per entry, by
setting). An exclusive ``flock`` on the file stops a second agentsh from appending to it; the
lock is taken *before* the file is read, so the tree a writer holds is never stale.

Reading is tolerant: bad JSON, non-UTF-8 bytes and malformed entries each yield one
:class:`LoadProblem` and are skipped (duplicate ids, orphans and cycles are found by the tree).
When a damaged line still shows its own ``id`` and ``parentId``, the tree re-attaches the
entries below it to its parent, so one bad line never costs the rest of the conversation.
Files of an older format version are upgraded in memory through :data:`MIGRATIONS` (and
rewritten in the new format, with a backup, when opened for appending); a file of a newer
version loads read-only.
"""

from __future__ import annotations

import errno
import fcntl
import gc
import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsh.errors import AgentshError
from agentsh.fsutil import fsync_dir
from agentsh.session import entries as _entries
from agentsh.session.entries import AnyEntry, EntryError, Header, encode_line
from agentsh.session.entry_parse import entry_from_json

Migration = Callable[[dict[str, Any]], dict[str, Any]]

#: version -> function upgrading one raw entry (or the header, ``type == "session"``) of that
#: version to version + 1. A missing step means the format did not change in a way that needs
#: one. The header's ``version`` is set by the loader, not by the migration.
MIGRATIONS: dict[int, Migration] = {}


class SessionError(AgentshError):
    """A session file problem a person can act on; the message says what and where."""


class SessionLocked(SessionError):
    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path.name} is open in another agentsh process; it cannot be appended to from "
            "here. Fork it to continue in a new session file."
        )
        self.path = path


class SessionReadOnly(SessionError):
    pass


@dataclass(frozen=True, slots=True)
class LoadProblem:
    line: int  # 1-based line number, 0 when the problem is not about one line
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(slots=True)
class LoadedLog:
    header: Header
    entries: list[AnyEntry]  # valid entries in file order (nodes and annotations)
    problems: list[LoadProblem] = field(default_factory=list)
    ends_with_newline: bool = True
    read_only_reason: str = ""
    line_numbers: list[int] = field(default_factory=list)  # parallel to ``entries``
    #: id -> parentId of damaged lines that still show both (see module docstring).
    damaged: dict[str, str | None] = field(default_factory=dict)
    #: the file's format version when it was older than this agentsh's (upgraded in memory).
    migrated_from: int | None = None


_program_froze = False  # see keep_frozen()


def keep_frozen(frozen: bool) -> None:
    """The program froze objects for good (``gc.freeze``; ``False``: it unfroze them), so
    :func:`gc_paused` must not promote: its unfreeze would thaw them too.

    Said, not asked: ``gc.get_freeze_count()`` walks every frozen object (50 ms per 3 million,
    a heap the TUI freezes), and the tree pane pauses the collector at each entry of a turn:
    seen in CI as 287 ms of the UI thread in one go.
    """
    global _program_froze
    _program_froze = frozen


@contextmanager
def gc_paused(*, promote: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while a log loads.

    A load allocates ~4 tracked objects per line and nothing cyclic; the collector would run
    hundreds of times over a growing heap (doubling the load time). With ``promote``, what
    is allocated meanwhile is moved straight to the oldest generation on the way out (freeze
    then unfreeze: no traversal), instead of being traversed by the next three collections as
    it ages; young garbage of the rest of the program waits for the next full collection, as
    it would after any collection. Skipped when the program froze objects itself
    (:func:`keep_frozen`).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if promote and not _program_froze:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def read_log(path: Path) -> LoadedLog:
    """Load a session file, skipping and reporting anything damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SessionError(f"session file not found: {path}") from exc
    except IsADirectoryError as exc:
        raise SessionError(f"{path} is a folder, not a session file") from exc
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_log(data, path)


_DECODER = json.JSONDecoder()
_DECODE = _DECODER.decode
# The C scanner behind ``decode``: parses one value starting at an offset of a longer string,
# so a load never copies lines out of the file's text.
_SCAN_ONCE: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
# The canonical start of an entry line (``encode_line`` writes keys in this order). Used only on
# damaged lines, to learn which entry was lost and where its children belong.
_DAMAGED_IDS = re.compile(r'^\{"type":"[^"\\]*","id":"([^"\\]+)","parentId":(?:null|"([^"\\]+)")')


def parse_log(data: bytes, path: Path | None = None) -> LoadedLog:
    with gc_paused():
        return _parse(data, str(path) if path else "session")


def _parse(data: bytes, where: str) -> LoadedLog:
    ends_with_newline = data.endswith(b"\n") or not data
    problems: list[LoadProblem] = []
    damaged: dict[str, str | None] = {}
    text: str | None
    lines: list[str | None] = []
    try:
        # One decode of the whole file is far cheaper than one per line (a newline byte never
        # occurs inside a multi-byte UTF-8 sequence, so lines are the same either way).
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
        lines = _split_bytes(data, problems, damaged)
        if ends_with_newline:
            lines.pop()  # the empty string after the final newline
    if text is not None:
        cut = text.find("\n")
        first: str | None = text if cut < 0 else text[:cut]
        body = len(text) if cut < 0 else cut + 1
    else:
        first = lines[0] if lines else ""
        body = 0
    if first == "":
        raise SessionError(f"{where} is empty or has no session header")
    header_raw = _decode_line(first) if first is not None else None
    if header_raw is None:
        raise SessionError(f"{where}: the first line is not a valid session header")
    try:
        header = Header.from_json(header_raw)
    except EntryError as exc:
        raise SessionError(f"{where}: {exc}") from exc

    current = _entries.FORMAT_VERSION
    read_only = ""
    upgrades: list[Migration] = []
    migrated_from: int | None = None
    if header.version > current:
        read_only = (
            f"written by a newer agentsh (format {header.version}, this one reads "
            f"{current}); opened read-only"
        )
        problems.append(LoadProblem(1, read_only))
    elif header.version < current:
        migrated_from = header.version
        upgrades = [MIGRATIONS[v] for v in range(header.version, current) if v in MIGRATIONS]
        for upgrade in upgrades:
            header_raw = upgrade(header_raw)
        header_raw["version"] = current
        header = Header.from_json(header_raw)

    loaded = LoadedLog(
        header=header,
        entries=[],
        problems=problems,
        ends_with_newline=ends_with_newline,
        read_only_reason=read_only,
        damaged=damaged,
        migrated_from=migrated_from,
    )
    if text is not None:
        _read_text(text, body, loaded, upgrades)
    else:
        _read_lines(lines, loaded, upgrades)
    return loaded


def _read_text(text: str, pos: int, loaded: LoadedLog, upgrades: list[Migration]) -> None:
    """The hot loop of every load: parse each line in place (no per-line copy), and hand
    anything that is not exactly one JSON value filling its line to :func:`_careful`."""
    scan = _SCAN_ONCE
    make = entry_from_json
    find = text.find
    append_entry = loaded.entries.append
    append_number = loaded.line_numbers.append
    problems = loaded.problems
    size = len(text)
    torn_tail = not loaded.ends_with_newline
    number = 1
    while pos < size:
        number += 1
        end_of_line = find("\n", pos)
        if end_of_line < 0:
            end_of_line = size
        try:
            raw, end = scan(text, pos)
        except (StopIteration, json.JSONDecodeError):
            end = -1
        if end != end_of_line:  # blank, padded, damaged, torn, or more than one value
            last = torn_tail and end_of_line == size
            raw = _careful(text[pos:end_of_line], number, last, loaded)
            if raw is None:
                pos = end_of_line + 1
                continue
        pos = end_of_line + 1
        if upgrades and type(raw) is dict:
            for upgrade in upgrades:
                raw = upgrade(raw)
        try:
            append_entry(make(raw))
        except EntryError as exc:
            problems.append(LoadProblem(number, f"{exc}; skipped"))
            continue
        append_number(number)


def _read_lines(lines: list[str | None], loaded: LoadedLog, upgrades: list[Migration]) -> None:
    """The slow path, for a file holding bytes that are not UTF-8 (already reported)."""
    last_number = len(lines)
    for number, line in enumerate(lines[1:], 2):
        if line is None:
            continue
        torn = number == last_number and not loaded.ends_with_newline
        raw = _careful(line, number, torn, loaded)
        if raw is None:
            continue
        for upgrade in upgrades if type(raw) is dict else ():
            raw = upgrade(raw)
        try:
            loaded.entries.append(entry_from_json(raw))
        except EntryError as exc:
            loaded.problems.append(LoadProblem(number, f"{exc}; skipped"))
            continue
        loaded.line_numbers.append(number)


def _careful(line: str, number: int, torn_last: bool, loaded: LoadedLog) -> Any:
    """Parse one line the slow, exact way; None (with the problem reported) when it is not
    JSON. Blank lines (an ended torn line, a hand edit) are silently harmless."""
    try:
        return _DECODE(line)
    except json.JSONDecodeError as exc:
        if not line.strip():
            return None
        if torn_last:
            what = "incomplete last line (an interrupted write)"
        elif exc.pos >= len(line.rstrip()) or exc.msg.startswith("Unterminated string"):
            # JSON that simply stops: a torn line that a later append ended
            what = "incomplete line (an interrupted write)"
        else:
            what = "not valid JSON"
        loaded.problems.append(LoadProblem(number, f"{what}; skipped"))
        _note_damaged(line, loaded.damaged)
        return None


def _split_bytes(
    data: bytes, problems: list[LoadProblem], damaged: dict[str, str | None]
) -> list[str | None]:
    """The file's lines as text; None for a line that is not UTF-8 (reported here)."""
    out: list[str | None] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            problems.append(LoadProblem(number, "not valid UTF-8; skipped"))
            _note_damaged(line.decode("utf-8", "replace"), damaged)
            out.append(None)
    return out


def _utf8(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def _decode_line(line: str) -> dict[str, Any] | None:
    try:
        value = _DECODE(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _note_damaged(line: str, damaged: dict[str, str | None]) -> None:
    if match := _DAMAGED_IDS.match(line):
        damaged.setdefault(match.group(1), match.group(2))


def iter_line_blocks(
    path: Path, start: int = 0, block_size: int = 1 << 24
) -> Iterator[tuple[int, bytes]]:
    """(byte offset of the block end, block) for the complete lines at or after ``start``, a
    block of up to ``block_size`` bytes (or one line, if longer) at a time. A last line still
    being written is left for next time. The catalog's bulk reader."""
    with path.open("rb") as handle:
        handle.seek(start)
        offset = start
        carry = b""
        while chunk := handle.read(block_size):
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            offset += cut
            carry = data[cut:]
            yield offset, data[:cut] if carry else data


def read_first_line(path: Path, limit: int = 1 << 16) -> bytes:
    """The header line (without reading the rest of the file)."""
    with path.open("rb") as handle:
        return handle.readline(limit)


class LogWriter:
    """Appends entries to one session file, holding an exclusive advisory lock on it."""

    def __init__(self, path: Path, fd: int, *, needs_newline: bool, fsync_each: bool) -> None:
        self.path = path
        self._fd: int | None = fd
        self.needs_newline = needs_newline
        self._fsync_each = fsync_each
        self._dirty = False

    @classmethod
    def create(cls, path: Path, header: Header, *, fsync_each: bool = False) -> LogWriter:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise SessionError(f"cannot create {path}: {exc.strerror or exc}") from exc
        writer = cls._locked(path, fd, needs_newline=False, fsync_each=fsync_each)
        writer._write(encode_line(header))
        writer.sync()
        fsync_dir(path.parent)
        return writer

    @classmethod
    def open(
        cls, path: Path, *, ends_with_newline: bool = True, fsync_each: bool = False
    ) -> LogWriter:
        """Lock an existing file for appending (raises :class:`SessionLocked`).

        Callers that have not read the file yet lock first and set :attr:`needs_newline`
        after reading, so nobody can append between the read and the lock.
        """
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError as exc:
            raise SessionError(f"session file not found: {path}") from exc
        except OSError as exc:
            raise SessionError(f"cannot open {path} for appending: {exc.strerror}") from exc
        return cls._locked(path, fd, needs_newline=not ends_with_newline, fsync_each=fsync_each)

    @classmethod
    def _locked(cls, path: Path, fd: int, *, needs_newline: bool, fsync_each: bool) -> LogWriter:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionLocked(path) from exc
            raise SessionError(f"cannot lock {path}: {exc.strerror}") from exc
        return cls(path, fd, needs_newline=needs_newline, fsync_each=fsync_each)

    def append(self, entry: AnyEntry) -> None:
        self.append_line(encode_line(entry))

    def append_line(self, line: bytes) -> None:
        """Write one complete, encoded line (newline included) in a single call."""
        if self.needs_newline:
            # The previous process died mid-line: end that torn line first so this entry
            # starts on a line of its own (the torn one is skipped on load).
            line = b"\n" + line
        self._write(line)
        self.needs_newline = False
        if self._fsync_each:
            self.sync()

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise SessionError(f"{self.path.name} is closed")
        try:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (full disk, signal): finish the line
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            # Whatever part of the line reached the file is a torn line; the next append must
            # start fresh so the damage stays confined to this one entry.
            self.needs_newline = True
            raise SessionError(f"could not write to {self.path.name}: {exc.strerror}") from exc
        self._dirty = True

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def close(self) -> None:
        if self._fd is None:
            return
        try:
            self.sync()
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None

    def upgrade_file(self, version: int) -> Path:
        """Rewrite the locked file in the current format; returns the backup of the original.

        Every line that parses goes through :data:`MIGRATIONS`; damaged lines are copied as
        they are (the reader keeps skipping them). The new file is written and locked under a
        temporary name and renamed over the old one, so there is no moment at which another
        agentsh could take the lock on a half-written file.
        """
        if self._fd is None:
            raise SessionError(f"{self.path.name} is closed")
        current = _entries.FORMAT_VERSION
        steps = [MIGRATIONS[v] for v in range(version, current) if v in MIGRATIONS]
        data = self.path.read_bytes()
        out: list[bytes] = []
        for number, line in enumerate(data.split(b"\n")):
            raw = _decode_line(_utf8(line)) if line.strip() else None
            if raw is None:
                if line.strip():
                    out.append(line + b"\n")
                continue
            for step in steps:
                raw = step(raw)
            if number == 0:
                raw["version"] = current
            out.append((json.dumps(raw, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        backup = self.path.with_name(f"{self.path.name}.v{version}.bak")
        temp = self.path.with_name(f".{self.path.name}.upgrading")
        fd = os.open(temp, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, b"".join(out))
            os.fsync(fd)
            if backup.exists():
                backup.unlink()
            os.link(self.path, backup)
            temp.replace(self.path)
        except OSError as exc:
            os.close(fd)
            temp.unlink(missing_ok=True)
            raise SessionError(f"could not upgrade {self.path.name}: {exc.strerror}") from exc
        fsync_dir(self.path.parent)
        old = self._fd
        self._fd = fd
        self.needs_newline = False
        fcntl.flock(old, fcntl.LOCK_UN)
        os.close(old)
        return backup


def is_locked(path: Path) -> bool:
    """True when another process holds the session's lock (used to offer a fork)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        # A shared probe: conflicts with a writer's exclusive lock, never with another probe.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
