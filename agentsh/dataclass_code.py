"""A bytecode cache for the methods ``@dataclass`` writes.

Python keeps a module's bytecode in ``__pycache__``, but ``@dataclass`` writes the source of
each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` (and, when frozen,
``__setattr__`` and ``__delattr__``) and compiles it again at every import: over half the cost
of a class, and agentsh defines about a hundred before its first frame and as many again for
the agent. :func:`install` has :mod:`dataclasses` run those sources through a table of code
objects kept beside agentsh's bytecode (``agentsh/__pycache__/dataclass-methods.<tag>.marshal``,
or where ``sys.pycache_prefix`` puts .pyc files), keyed by the exact source text: a stale entry
is never used, only left unused; the tag (the interpreter's and its ``-O`` level, as for .pyc)
keeps each Python's apart. What runs is what ``exec`` of that source gives: the same text,
compiled as ``dataclasses`` compiles it (file ``<string>``, no inherited ``__future__`` flags),
run in the same namespaces.

The table is written when the process exits, only if it compiled something new and only where
.pyc files would be written (not under ``PYTHONDONTWRITEBYTECODE``), atomically, merged with
what other processes wrote meanwhile and kept under :data:`MAX_ENTRIES`. An unreadable or odd
file is ignored. Standard library only; the command line installs it for its own process
(:func:`agentsh.cli.main`), a program that imports agentsh is left alone.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import threading
from importlib.util import cache_from_source
from pathlib import Path
from types import CodeType
from typing import Any

MAX_ENTRIES = 4096  # ~1 KB each; agentsh's TUI and agent use ~1,300
_STEM = "dataclass-methods"

_installed: MethodCache | None = None
_install_lock = threading.Lock()


def cache_path() -> Path | None:
    """Where this interpreter keeps the table (``None``: it keeps no bytecode)."""
    source = Path(__file__).with_name(f"{_STEM}.py")
    try:
        return Path(cache_from_source(str(source))).with_suffix(".marshal")
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None


def read_table(path: Path) -> dict[str, bytes]:
    """The table stored at ``path``, each code object still marshalled (read when used); empty
    when the file is missing, unreadable or not a table."""
    try:
        table = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, bytes)}


def _code(blob: bytes) -> CodeType | None:
    try:
        code = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


class MethodCache:
    """Code objects by source text, standing in for ``exec`` inside :mod:`dataclasses`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.table = read_table(path) if path is not None else {}
        self.fresh: dict[str, bytes] = {}  # compiled by this process: to be written
        self.used: set[str] = set()  # every source this process ran

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
        blob = self.table.get(source)
        code = _code(blob) if blob is not None else None
        if code is None:
            # As exec(source) compiles it in dataclasses: "<string>", and that module's (no)
            # __future__ flags rather than this module's.
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.table[source] = self.fresh[source] = marshal.dumps(code)
        self.used.add(source)
        builtins.exec(code, globs, locs, **kwargs)

    def save(self) -> None:
        """Write the table if this process compiled something new (best effort)."""
        if self.path is None or not self.fresh or sys.dont_write_bytecode:
            return
        fresh = dict(self.fresh)  # a copy: another thread may still be defining classes
        merged = {**read_table(self.path), **fresh}
        if len(merged) > MAX_ENTRIES:  # keep what this process ran
            merged = {k: v for k, v in merged.items() if k in self.used}
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(marshal.dumps(merged))
            temporary.replace(self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        for source in fresh:
            self.fresh.pop(source, None)


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
    cache.table, cache.fresh, cache.used = {}, {}, set()
