"""A bytecode cache for the methods ``@dataclass`` writes.

Python keeps a module's bytecode in ``__pycache__``, but ``@dataclass`` writes the source of
each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and, when frozen,
``__setattr__`` and ``__delattr__``) and compiles it again at every import: over half the cost
of a class, and agentsh defines about a hundred before its first frame and as many again for
the agent. :func:`install` has :mod:`dataclasses` run those sources through a table of code
objects kept beside agentsh's bytecode (``agentsh/__pycache__/dataclass-methods.<tag>.marshal``,
or where ``sys.pycache_prefix`` puts .pyc files), keyed by a 128-bit BLAKE2 digest of the exact
source text (hash-based .pyc files trust a 64-bit one): a stale entry is never used, only left
unused; the tag (the interpreter's and its ``-O`` level, as for .pyc) keeps each Python's apart.
What runs is what ``exec`` of that source gives: the same text, compiled as ``dataclasses``
compiles it (file ``<string>``, no inherited ``__future__`` flags), run in the same namespaces.

The file holds an index (digest to place) and one blob of marshalled code objects, each read
when its class is defined; the table is let go once start-up is over (:func:`settle`). It is
written when something new was compiled and only where .pyc files would be written (not under
``PYTHONDONTWRITEBYTECODE``), atomically, merged with what other processes wrote meanwhile and
kept under :data:`MAX_ENTRIES`. An unreadable or odd file is ignored. Standard library only;
the command line installs it for its own process (:func:`agentsh.cli.main`), a program that
imports agentsh is left alone.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import hashlib
import marshal
import os
import sys
import threading
from importlib.util import cache_from_source
from pathlib import Path
from types import CodeType
from typing import Any

MAX_ENTRIES = 4096  # ~1 KB each; agentsh's TUI and agent use ~1,400
_STEM = "dataclass-methods"
_SHIFT = 32  # an index value: the entry's start in the blob << _SHIFT | its length

_installed: MethodCache | None = None
_install_lock = threading.Lock()

Index = dict[bytes, int]


def cache_path() -> Path | None:
    """Where this interpreter keeps the table (``None``: it keeps no bytecode)."""
    source = Path(__file__).with_name(f"{_STEM}.py")
    try:
        return Path(cache_from_source(str(source))).with_suffix(".marshal")
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None


def digest(source: str) -> bytes:
    """The key of ``source`` in the table."""
    return hashlib.blake2b(source.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def read_table(path: Path) -> tuple[Index, bytes]:
    """The index and the blob stored at ``path``; empty when the file is missing, unreadable
    or not a table."""
    try:
        stored = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}, b""
    if not (
        isinstance(stored, tuple)
        and len(stored) == 2
        and isinstance(stored[0], dict)
        and isinstance(stored[1], bytes)
    ):
        return {}, b""
    index, blob = stored
    valid = {
        k: v
        for k, v in index.items()
        if isinstance(k, bytes) and type(v) is int and v >= 0 and _end(v) <= len(blob)
    }
    return valid, blob


def _end(place: int) -> int:
    return (place >> _SHIFT) + (place & ((1 << _SHIFT) - 1))


def entries(index: Index, blob: bytes) -> dict[bytes, bytes]:
    """Each digest's marshalled code, as stored."""
    mask = (1 << _SHIFT) - 1
    return {
        key: blob[place >> _SHIFT : (place >> _SHIFT) + (place & mask)]
        for key, place in index.items()
    }


def write_table(path: Path, table: dict[bytes, bytes]) -> None:
    """Store ``table`` (digest to marshalled code) at ``path``, atomically (OSError if not)."""
    index: Index = {}
    parts: list[bytes] = []
    start = 0
    for key, code in table.items():
        index[key] = start << _SHIFT | len(code)
        parts.append(code)
        start += len(code)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps((index, b"".join(parts))))
        temporary.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def _code(blob: bytes, place: int) -> CodeType | None:
    start, length = place >> _SHIFT, place & ((1 << _SHIFT) - 1)
    try:
        code = marshal.loads(memoryview(blob)[start : start + length])
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


class MethodCache:
    """Code objects by the digest of their source, standing in for ``exec`` inside
    :mod:`dataclasses`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._read = path is None  # the file is read at the first class (not by --help)
        self.index: Index = {}
        self.blob = b""
        self.fresh: dict[bytes, bytes] = {}  # compiled by this process: to be written
        self.used: set[bytes] = set()  # the digest of every source this process ran

    def writes(self) -> bool:
        """Whether the table can be written (as .pyc files are)."""
        return self.path is not None and not sys.dont_write_bytecode

    def exec(
        self,
        source: Any,
        globs: dict[str, Any] | None = None,
        locs: Any = None,
        /,
        **kwargs: Any,
    ) -> None:
        if globs is None:  # exec's "current scope": the caller's, not this method's
            caller = sys._getframe(1)
            globs = caller.f_globals
            if locs is None:
                locs = caller.f_locals
        if type(source) is not str:
            builtins.exec(source, globs, locs, **kwargs)
            return
        if not self._read:
            self._read = True
            self.index, self.blob = read_table(self.path) if self.path else ({}, b"")
        key = digest(source)
        place = self.index.get(key)
        code = _code(self.blob, place) if place is not None else None
        if code is None and key in self.fresh:
            code = marshal.loads(self.fresh[key])
        if code is None:
            # As exec(source) compiles it in dataclasses: "<string>", and that module's (no)
            # __future__ flags rather than this module's.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            if self.writes():
                self.fresh[key] = marshal.dumps(code)
        if self.writes():  # else nothing is kept: the table will not be written
            self.used.add(key)
        builtins.exec(code, globs, locs, **kwargs)

    def save(self) -> None:
        """Write the table if this process compiled something new (best effort)."""
        if self.path is None or not self.fresh or not self.writes():
            return
        fresh = dict(self.fresh)  # a copy: another thread may still be defining classes
        merged = {**entries(*read_table(self.path)), **fresh}
        if len(merged) > MAX_ENTRIES:  # keep what this process ran
            merged = {k: v for k, v in merged.items() if k in self.used}
        try:
            write_table(self.path, merged)
        except (OSError, ValueError):
            return
        for key in fresh:
            self.fresh.pop(key, None)


def install() -> MethodCache:
    """Have :mod:`dataclasses` compile through the table from now on (once per process), and
    write it at exit."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = MethodCache(cache_path())
            dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
            atexit.register(_installed.save)
        return _installed


def save() -> None:
    """Write what is new now, not only at exit: a TUI whose terminal closes (SIGHUP) ends
    without exit handlers. A no-op where :func:`install` was not called."""
    if _installed is not None:
        _installed.save()


def settle() -> None:
    """Start-up is over: write what is new, and let :mod:`dataclasses` compile as it does
    without the table from now on (the classes still to come are few; the table's memory is
    let go). A no-op where :func:`install` was not called."""
    with _install_lock:
        cache = _installed
        if cache is None or getattr(dataclasses, "exec", None) != cache.exec:
            return
        del dataclasses.exec  # type: ignore[attr-defined]
    cache.save()
    cache.index, cache.blob, cache.fresh, cache.used = {}, b"", {}, set()
    cache._read = True
