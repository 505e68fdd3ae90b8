"""The table of code objects ``@dataclass`` compiles through (agentsh.dataclass_code): what a
class gets from it is what it gets from ``dataclasses`` alone; a second process compiles
nothing the first one saved; an odd file is ignored."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentsh import dataclass_code
from agentsh.dataclass_code import MethodCache, digest, entries, read_table, write_table

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where .pyc files are written (this shell may say PYTHONDONTWRITEBYTECODE)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


@contextmanager
def compiling_through(cache: MethodCache) -> Iterator[MethodCache]:
    """``dataclasses`` runs its sources through ``cache`` inside the block only."""
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        yield cache
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]


def _classes() -> tuple[type[Any], type[Any], type[Any]]:
    """A frozen slotted class with defaults and a factory, a mutable ordered one, and one
    with a keyword-only field: every method ``dataclasses`` writes."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Frozen:
        name: str
        count: int = 0
        tags: tuple[str, ...] = ()
        extra: list[int] = dataclasses.field(default_factory=list, compare=False)

    @dataclasses.dataclass(order=True)
    class Ordered:
        a: int
        b: str = "b"

    @dataclasses.dataclass(kw_only=True, unsafe_hash=True)
    class KeywordOnly:
        x: int
        y: float = 1.5

    return Frozen, Ordered, KeywordOnly


def _behaviour(classes: tuple[type[Any], type[Any], type[Any]]) -> list[Any]:
    frozen, ordered, keyword_only = classes
    f1, f2 = frozen("a", 2, ("t",)), frozen("a", 2, ("t",), [9])
    try:
        f1.count = 3
        frozen_error = ""
    except dataclasses.FrozenInstanceError as exc:
        frozen_error = str(exc)
    return [
        repr(f1),
        f1 == f2,
        hash(f1) == hash(f2),
        frozen_error,
        f1.extra,
        ordered(1) < ordered(2, "a"),
        repr(sorted([ordered(2), ordered(1, "z")])),
        repr(keyword_only(x=3)),
        hash(keyword_only(x=3)) == hash(keyword_only(x=3)),
        [str(inspect.signature(c)) for c in classes],
        [c.__init__.__annotations__ for c in classes],  # strings here: no future flags leaked
        [dataclasses.astuple(c) for c in (f1, ordered(1), keyword_only(x=1))],
        frozen.__match_args__,
        frozen.__slots__,
    ]


def test_a_class_made_through_the_table_behaves_as_one_made_without(tmp_path: Path) -> None:
    plain = _behaviour(_classes())
    table = tmp_path / "table.marshal"
    with compiling_through(MethodCache(table)) as first:
        compiled = _behaviour(_classes())
        first.save()
    assert first.fresh == {}  # written
    with compiling_through(MethodCache(table)) as second:
        from_table = _behaviour(_classes())
    assert compiled == plain
    assert from_table == plain
    assert second.fresh == {}  # everything came from the first process's table
    assert plain[10][0] == {"name": "str", "count": "int", "tags": "tuple[str, ...]",
                            "extra": "list[int]", "return": None}  # fmt: skip


def test_a_second_process_compiles_nothing_the_first_saved(tmp_path: Path) -> None:
    table = tmp_path / "table.marshal"
    with compiling_through(MethodCache(table)) as first:
        _classes()
    sources = set(first.fresh)
    assert len(sources) >= 10
    first.save()
    assert set(entries(*read_table(table))) == sources
    second = MethodCache(table)
    calls: list[str] = []
    second_compile: Callable[..., Any] = compile

    def counting_compile(source: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(source)
        return second_compile(source, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.compile", counting_compile)
        with compiling_through(second):
            _classes()
    assert calls == []
    mtime = table.stat().st_mtime_ns
    second.save()  # nothing new: nothing written
    assert table.stat().st_mtime_ns == mtime


def test_an_odd_or_unreadable_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    table = tmp_path / "table.marshal"
    odd = [b"not marshal", marshal.dumps([1, 2]), marshal.dumps(({"k": 1}, b"")), b""]
    odd += [marshal.dumps(({b"k": -1}, b"x")), marshal.dumps(({b"k": (1 << 32) | 2}, b"xx"))]
    for content in odd:
        table.write_bytes(content)
        assert read_table(table)[0] == {}  # no entry to read
    cache = MethodCache(table)
    with compiling_through(cache):
        assert _behaviour(_classes()) == _behaviour(_classes())
    cache.save()
    assert len(entries(*read_table(table))) >= 10
    # An entry that is not a code object is compiled again, as if it were missing.
    write_table(table, {key: marshal.dumps(7) for key in entries(*read_table(table))})
    again = MethodCache(table)
    with compiling_through(again):
        assert _behaviour(_classes()) == _behaviour(_classes())
    assert set(again.fresh) == set(entries(*read_table(table)))


def test_nothing_is_written_where_bytecode_is_not(tmp_path: Path) -> None:
    table = tmp_path / "table.marshal"
    cache = MethodCache(table)
    with compiling_through(cache):
        _classes()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "dont_write_bytecode", True)
        cache.save()
    assert not table.exists()


def test_a_full_table_keeps_what_this_process_ran(tmp_path: Path) -> None:
    table = tmp_path / "table.marshal"
    stale = {digest(f"x = {n}"): marshal.dumps(compile(f"x = {n}", "", "exec")) for n in range(50)}
    write_table(table, stale)
    cache = MethodCache(table)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dataclass_code, "MAX_ENTRIES", 40)
        with compiling_through(cache):
            _classes()
        ran = set(cache.fresh)
        cache.save()
    assert set(entries(*read_table(table))) == ran


def test_exec_without_namespaces_runs_in_the_callers_scope(tmp_path: Path) -> None:
    cache = MethodCache(tmp_path / "table.marshal")
    seen: dict[str, int] = {}

    def caller(run: Callable[..., Any], key: str) -> None:
        box, value = seen, 41  # noqa: F841 - read by the executed source
        run("box[key] = value + 1")  # the caller's locals (builtins.exec's "current scope")

    caller(exec, "builtin")
    caller(cache.exec, "cached")
    assert seen == {"builtin": 42, "cached": 42}
    assert list(cache.fresh) == [digest("box[key] = value + 1")]


def test_the_command_line_keeps_the_table_beside_its_bytecode(tmp_path: Path) -> None:
    """``agentsh`` as a process writes the table where its .pyc files go; run again, it finds
    every class's methods there (nothing new to write)."""
    prefix = tmp_path / "pycache"
    env = {
        **os.environ,
        "PYTHONPYCACHEPREFIX": str(prefix),
        "AGENTSH_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "agentsh", "sessions"]
    subprocess.run(command, env=env, cwd=tmp_path, check=True, capture_output=True, timeout=120)
    tables = list(prefix.rglob("dataclass-methods.*.marshal"))
    assert len(tables) == 1, tables
    assert tables[0].parent.name == "agentsh"
    assert len(entries(*read_table(tables[0]))) >= 20
    written = tables[0].stat().st_mtime_ns
    subprocess.run(command, env=env, cwd=tmp_path, check=True, capture_output=True, timeout=120)
    assert tables[0].stat().st_mtime_ns == written


def test_settling_writes_the_table_and_gives_dataclasses_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TUI settles once its agent is built: what was compiled is written (a TUI ended by
    SIGHUP runs no exit handler), and later classes compile as without the table."""
    cache = MethodCache(tmp_path / "table.marshal")
    monkeypatch.setattr(dataclass_code, "_installed", cache)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        _classes()
        dataclass_code.settle()
        given_back = "exec" not in vars(dataclasses)
    finally:
        vars(dataclasses).pop("exec", None)
    assert given_back
    assert cache.index == {}
    assert len(entries(*read_table(tmp_path / "table.marshal"))) >= 10
    _classes()
    assert cache.fresh == {}
    dataclass_code.settle()  # twice: nothing more


def test_a_caller_of_main_with_its_own_arguments_is_left_alone(tmp_path: Path) -> None:
    code = (
        "import dataclasses; from agentsh.cli import main; main(['sessions']); "
        "print(hasattr(dataclasses, 'exec'))"
    )
    env = {**os.environ, "AGENTSH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "False"
