"""The session file on disk: a tolerant reader and a locked, append-only writer.

Durability rules (SPEC §2): every entry is one complete line written with a single ``write``
on an ``O_APPEND`` descriptor, so a kill can only ever tear the *last* line; the reader skips a
torn or damaged line with one problem report and the writer starts its next line on a fresh
line. ``fsync`` happens when the caller says a turn ended and on close (or per entry, by
setting). An exclusive ``flock`` on the file stops a second agentsh from appending to it.

Reading is tolerant: bad JSON, non-UTF-8 bytes, malformed entries, duplicate ids, orphans and
cycles each yield one :class:`LoadProblem` and are skipped; everything else loads. Files of an
older format version are upgraded in memory through :data:`MIGRATIONS`; a newer version loads
read-only.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsh.session.entries import (
    FORMAT_VERSION,
    AnyEntry,
    EntryError,
    Header,
    encode_line,
    entry_from_json,
)

Migration = Callable[[dict[str, Any]], dict[str, Any]]

#: version -> function upgrading one raw entry (or the header) of that version to version + 1.
MIGRATIONS: dict[int, Migration] = {}


class SessionError(Exception):
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


def read_log(path: Path) -> LoadedLog:
    """Load a session file, skipping and reporting anything damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise SessionError(f"session file not found: {path}") from exc
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_log(data, path)


def parse_log(data: bytes, path: Path | None = None) -> LoadedLog:
    where = str(path) if path else "session"
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n") or not data
    if ends_with_newline:
        lines.pop()  # the empty string after the final newline
    if not lines or not lines[0].strip():
        raise SessionError(f"{where} is empty or has no session header")
    header_raw = _decode(lines[0])
    if header_raw is None:
        raise SessionError(f"{where}: the first line is not a valid session header")
    try:
        header = Header.from_json(header_raw)
    except EntryError as exc:
        raise SessionError(f"{where}: {exc}") from exc

    problems: list[LoadProblem] = []
    read_only = ""
    upgrades: list[Migration] = []
    if header.version > FORMAT_VERSION:
        read_only = (
            f"written by a newer agentsh (format {header.version}, this one reads "
            f"{FORMAT_VERSION}); opened read-only"
        )
        problems.append(LoadProblem(1, read_only))
    elif header.version < FORMAT_VERSION:
        upgrades = [MIGRATIONS[v] for v in range(header.version, FORMAT_VERSION) if v in MIGRATIONS]

    entries: list[AnyEntry] = []
    last_index = len(lines) - 1
    for number, raw_line in enumerate(lines[1:], start=2):
        if not raw_line.strip():
            continue
        torn = number - 1 == last_index and not ends_with_newline
        raw = _decode(raw_line)
        if raw is None:
            what = "incomplete last line (interrupted write)" if torn else _why_bad(raw_line)
            problems.append(LoadProblem(number, f"{what}; skipped"))
            continue
        for upgrade in upgrades:
            raw = upgrade(raw)
        try:
            entries.append(entry_from_json(raw))
        except EntryError as exc:
            problems.append(LoadProblem(number, f"{exc}; skipped"))
    return LoadedLog(
        header=header,
        entries=entries,
        problems=problems,
        ends_with_newline=ends_with_newline,
        read_only_reason=read_only,
    )


def _decode(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _why_bad(line: bytes) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "not valid UTF-8"
    return "not valid JSON" if line.lstrip()[:1] != b"[" else "not a JSON object"


def iter_raw_lines(path: Path, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """(byte offset of the line end, line) for each complete line at or after ``start``.

    Used by the catalog to read only what was appended since it last looked.
    """
    with path.open("rb") as handle:
        handle.seek(start)
        offset = start
        for line in handle:
            if not line.endswith(b"\n"):
                return  # a line still being written: read it next time
            offset += len(line)
            yield offset, line


class LogWriter:
    """Appends entries to one session file, holding an exclusive advisory lock on it."""

    def __init__(self, path: Path, fd: int, *, needs_newline: bool, fsync_each: bool) -> None:
        self.path = path
        self._fd: int | None = fd
        self._needs_newline = needs_newline
        self._fsync_each = fsync_each
        self._dirty = False

    @classmethod
    def create(cls, path: Path, header: Header, *, fsync_each: bool = False) -> LogWriter:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
        writer = cls._locked(path, fd, needs_newline=False, fsync_each=fsync_each)
        writer._write(encode_line(header))
        writer.sync()
        _fsync_dir(path.parent)
        return writer

    @classmethod
    def open(cls, path: Path, *, ends_with_newline: bool, fsync_each: bool = False) -> LogWriter:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        return cls._locked(path, fd, needs_newline=not ends_with_newline, fsync_each=fsync_each)

    @classmethod
    def _locked(cls, path: Path, fd: int, *, needs_newline: bool, fsync_each: bool) -> LogWriter:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionLocked(path) from exc
            raise
        return cls(path, fd, needs_newline=needs_newline, fsync_each=fsync_each)

    def append(self, entry: AnyEntry) -> None:
        line = encode_line(entry)
        if self._needs_newline:
            # The previous process died mid-line: end that torn line first so this entry
            # starts on a line of its own (the torn one is skipped on load).
            line = b"\n" + line
        self._write(line)
        self._needs_newline = False
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
            self._needs_newline = True
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


def is_locked(path: Path) -> bool:
    """True when another process holds the session's lock (used to offer a fork)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
