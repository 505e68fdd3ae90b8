"""One configured value checked against its setting: type, bounds, choices, tables.

:func:`agentsh.config.load_config` walks the TOML tables; each leaf value comes here with its
field's type hint and the metadata ``_num``/``_choice`` declared next to the field. The answer is
the value to use (an integer-valued float made an int, a number made a float) or a :class:`Bad`
saying in words what is allowed, which becomes a :class:`ConfigProblem` (defined here, so the
project limits of :mod:`agentsh.config_project` can report too) while the default stays.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsh.termsafe import one_line


@dataclass(frozen=True, slots=True)
class Bad:
    """Why a configured value was refused (the caller keeps the default)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One bad setting, ignored in favour of its default."""

    file: Path
    key: str
    message: str

    def __str__(self) -> str:
        # One line whatever the file's names and keys hold: printed as-is, a newline in a
        # project's TOML key would forge a line of agentsh's own.
        return one_line(f"{self.file}: {self.key}: {self.message}")


def check_value(hint: Any, meta: Mapping[str, Any], value: Any) -> Any:
    """``value`` as the setting typed ``hint`` takes it, or a :class:`Bad` saying why not."""
    choices = meta.get("choices")
    if hint is bool:
        return value if isinstance(value, bool) else Bad("must be true or false")
    if hint is int or hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return Bad(f"must be {'an integer' if hint is int else 'a number'}")
        if hint is int and isinstance(value, float):
            if not value.is_integer():
                return Bad("must be an integer")
            value = int(value)
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return Bad(_range_text(lo, hi))
        return float(value) if hint is float else value
    if hint is str:
        if not isinstance(value, str):
            return Bad("must be a string")
        if choices and value not in choices:
            return Bad(f"must be one of {', '.join(choices)}")
        return value
    if meta.get("tables"):
        # Each table is read and checked by its owner (agentsh.mcp.servers_config), which also
        # needs to know which file it came from.
        if not isinstance(value, Mapping) or not all(
            isinstance(v, Mapping) for v in value.values()
        ):
            return Bad("must be a table of tables")
        return dict(value)
    if _is_str_dict(hint):
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return Bad("must be a table of strings")
        return dict(value)
    return Bad("has an unsupported type")  # pragma: no cover - a programming error


def _is_str_dict(hint: Any) -> bool:
    origin = getattr(hint, "__origin__", None)
    return origin is dict or (isinstance(hint, types.GenericAlias) and hint.__origin__ is dict)


def _range_text(lo: float | None, hi: float | None) -> str:
    """What a bounded number must be, in words ("at least 1", not "between 1 and any")."""
    if lo is not None and hi is not None:
        return f"must be between {_fmt(lo)} and {_fmt(hi)}"
    if lo is not None:
        return f"must be at least {_fmt(lo)}"
    return f"must be at most {_fmt(hi)}"


def _fmt(bound: float | None) -> str:
    if bound is None:
        return "any"
    return str(int(bound)) if float(bound).is_integer() else str(bound)
