"""What every tool is: one parameter dataclass, a schema generated from it, a run method.

A tool declares its parameters once, as a frozen dataclass whose fields carry descriptions
(:func:`param`). The JSON schema sent to the model and the validation of the model's arguments
both come from that one definition, so they cannot disagree. Tools get their effects (project
root, settings, an ``emit`` callback for streaming output, the cancel signal) through
:class:`ToolContext`, which keeps each tool testable on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from agentsh.config import Settings
from agentsh.events import Event
from agentsh.paths import ProjectPaths, UserPaths


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool's parameters; the message goes back to it."""


class Effect(StrEnum):
    """What a call does, which decides whether it needs approval (SPEC §3)."""

    READ = "read"  # never asks
    EDIT = "edit"  # write/edit of files
    EXECUTE = "execute"  # runs a command


@dataclass(frozen=True, slots=True)
class ToolResult:
    content: str
    is_error: bool = False
    truncated: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # diff, full_output_path, exit_code


@dataclass(slots=True)
class ToolContext:
    project: ProjectPaths
    user: UserPaths
    settings: Settings
    cwd: Path
    call_id: str = ""
    emit: Callable[[Event], None] = lambda _event: None
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    session_id: str = ""


def param(description: str, default: Any = dataclasses.MISSING, **schema: Any) -> Any:
    """A tool parameter: its description (and extra JSON-schema keys) live next to the type."""
    meta = {"description": description, "schema": schema}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[Any]]  # a frozen dataclass built with param()

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema litellm passes to every provider."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": params_schema(self.Params),
            },
        }

    def parse(self, arguments: Mapping[str, Any]) -> Any:
        return parse_params(self.Params, arguments)

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        """Reads by default; tools that write or run override this."""
        return Effect.READ

    def target_paths(self, params: Any, ctx: ToolContext) -> list[Path]:
        """Files this call would write (checked against the project root)."""
        return []

    def summary(self, params: Any) -> str:
        """One header line for the UI and the tree, e.g. ``bash: pytest -q``."""
        return self.name

    @abstractmethod
    async def run(self, params: Any, ctx: ToolContext) -> ToolResult: ...


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]


# -- schema generation ----------------------------------------------------------------------

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def params_schema(params_cls: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(params_cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(params_cls):
        prop = _type_schema(hints[f.name])
        prop["description"] = f.metadata.get("description", "")
        prop.update(f.metadata.get("schema", {}))
        properties[f.name] = prop
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _type_schema(hint: Any) -> dict[str, Any]:
    inner, _optional = _unwrap_optional(hint)
    if inner in _JSON_TYPES:
        return {"type": _JSON_TYPES[inner]}
    if isinstance(inner, type) and issubclass(inner, StrEnum):
        return {"type": "string", "enum": [m.value for m in inner]}
    if typing.get_origin(inner) is typing.Literal:
        return {"type": "string", "enum": list(typing.get_args(inner))}
    if typing.get_origin(inner) in (list, tuple):
        args = typing.get_args(inner)
        return {"type": "array", "items": _type_schema(args[0]) if args else {}}
    raise TypeError(f"unsupported parameter type {hint!r}")


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def parse_params(params_cls: type[Any], arguments: Mapping[str, Any]) -> Any:
    """Validate the model's arguments against the dataclass; errors say what to fix."""
    if not isinstance(arguments, Mapping):
        raise ToolArgumentError("arguments must be a JSON object")
    hints = typing.get_type_hints(params_cls)
    known = {f.name: f for f in dataclasses.fields(params_cls)}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ToolArgumentError(
            f"unknown argument(s) {', '.join(unknown)}; expected {', '.join(known)}"
        )
    values: dict[str, Any] = {}
    for name, f in known.items():
        if name not in arguments:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ToolArgumentError(f"missing required argument '{name}'")
            continue
        values[name] = _coerce(name, hints[name], arguments[name])
    return params_cls(**values)


def _coerce(name: str, hint: Any, value: Any) -> Any:
    inner, optional = _unwrap_optional(hint)
    if value is None:
        if optional:
            return None
        raise ToolArgumentError(f"'{name}' must not be null")
    if inner is bool:
        if isinstance(value, bool):
            return value
    elif inner is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)  # models often quote numbers
    elif inner is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif inner is str:
        if isinstance(value, str):
            return value
    elif isinstance(inner, type) and issubclass(inner, StrEnum):
        try:
            return inner(value)
        except ValueError:
            pass
        allowed = ", ".join(m.value for m in inner)
        raise ToolArgumentError(f"'{name}' must be one of {allowed}")
    elif typing.get_origin(inner) is typing.Literal:
        if value in typing.get_args(inner):
            return value
        allowed = ", ".join(map(str, typing.get_args(inner)))
        raise ToolArgumentError(f"'{name}' must be one of {allowed}")
    elif typing.get_origin(inner) in (list, tuple) and isinstance(value, list):
        args = typing.get_args(inner)
        item = args[0] if args else Any
        items = [_coerce(f"{name}[]", item, v) for v in value] if item is not Any else value
        return tuple(items) if typing.get_origin(inner) is tuple else items
    expected = _type_schema(hint).get("type", "value")
    raise ToolArgumentError(f"'{name}' must be of type {expected}, got {type(value).__name__}")
