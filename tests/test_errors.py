"""One root for the errors agentsh raises on purpose, and the exit codes in one place."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from agentsh import errors
from agentsh.errors import AgentshError, CliError

PACKAGE = Path(__file__).resolve().parents[1] / "agentsh"


def _module_names() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] in ("__init__", "__main__"):
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def test_every_exception_class_derives_from_agentsh_error() -> None:
    strays = []
    for name in _module_names():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                continue
            if not issubclass(cls, AgentshError):
                strays.append(f"{name}.{cls.__qualname__}")
    assert not strays, f"base these on agentsh.errors.AgentshError: {strays}"


def test_classes_callers_catch_as_builtins_keep_their_builtin_base() -> None:
    from agentsh.agent import AgentBusy
    from agentsh.memory.index import SearchIndexError
    from agentsh.session.catalog import SessionNotFound
    from agentsh.session.entries import EntryError
    from agentsh.tools.base import ToolArgumentError

    assert issubclass(SessionNotFound, LookupError)  # headless catches LookupError
    assert issubclass(EntryError, ValueError)
    assert issubclass(ToolArgumentError, ValueError)
    assert issubclass(AgentBusy, RuntimeError)
    assert issubclass(SearchIndexError, RuntimeError)


def test_exit_codes_live_in_errors_and_cli_error_carries_one() -> None:
    assert (errors.EXIT_OK, errors.EXIT_ERROR, errors.EXIT_USAGE) == (0, 1, 2)
    assert errors.EXIT_INTERRUPTED == 130
    assert CliError("x").code == errors.EXIT_ERROR
    assert CliError("x", errors.EXIT_USAGE).code == 2
