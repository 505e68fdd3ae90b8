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
import difflib
import os
import stat
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from agentsh.config import Settings
from agentsh.errors import AgentshError
from agentsh.events import Event
from agentsh.paths import ProjectPaths, UserPaths

if TYPE_CHECKING:
    from agentsh.tools.host import ToolHost


class ToolArgumentError(AgentshError, ValueError):
    """The model's arguments do not fit the tool's parameters; the message goes back to it."""


class ToolError(AgentshError):
    """A call that cannot be done (missing file, offset past the end...); its message is the
    error result the model reads, so it says what went wrong and what to do instead."""


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
    project_trusted: bool = True  # False: the folder's own memory is neither read nor written
    # Set by the approval when the user allowed this call to write outside the project; a
    # write that only leads outside by the time it runs (a link swapped in) is refused.
    outside_allowed: bool = False
    # What the user answered to each approval the call asked ({"decision", "summary", "group"}):
    # kept in the result's details ("approvals"), so a reload shows what the prompt showed.
    approvals: list[dict[str, str]] = field(default_factory=list)
    # Set by the approval when the one who allowed the call rewrote its input (the Claude
    # Agent SDK's ``updatedInput``), parsed and checked again: the call runs with these.
    approved_params: Any = None
    # Folders the user added on the command line (--add-dir), resolved: written like the
    # project, beneath them without following links.
    added_dirs: tuple[Path, ...] = ()
    # Provider keys from the environment: what a tool saves on its own (bash's full output)
    # is written without them, as the log and the screen are.
    secrets: tuple[str, ...] = ()
    # An editor's file buffers and terminals (ACP), used in place of the local ones for what
    # they cover (see agentsh.tools.host); None: everything is local.
    host: ToolHost | None = None


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
    # Whose words the output carries, following "data" ("read from a file"): the call loop
    # has the injection guard read it (agentsh/tools/untrusted.py). Empty: the tool writes
    # its own words, or guards its output itself (MCP tools).
    output_origin: ClassVar[str] = ""

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

    def read_paths(self, params: Any, ctx: ToolContext) -> list[Path]:
        """The file or folder this call reads by the path the model named (checked against
        the project and the ``--add-dir`` folders: a read outside them asks)."""
        return []

    def protected_target(self, params: Any, ctx: ToolContext) -> str | None:
        """A protected path the call visibly writes that ``target_paths`` cannot name (a
        shell command's text), in words; see :mod:`agentsh.tools.protected`."""
        return None

    def shared_target(self, params: Any, ctx: ToolContext) -> str | None:
        """What the call changes that every project's sessions read (the user's USER.md, in
        their system prompt), in words, or None. Such a change asks, denied with ``-p``, unless
        the user's own ``--approve all`` or an allow rule naming the tool lets it through."""
        return None

    def summary(self, params: Any) -> str:
        """One header line for the UI and the tree, e.g. ``bash: pytest -q``."""
        return self.name

    def approval_group(self) -> tuple[str, str] | None:
        """(key, label) of the group "allow for this session" can cover at once (an MCP
        server's tools: ``("mcp__git__", "every tool of MCP server 'git'")``), or None."""
        return None

    def mcp_identity(self) -> tuple[str, str] | None:
        """(server, tool) as the MCP server is configured and names the tool, for an MCP
        server's tool: what ``mcp__...`` rules are matched against (:mod:`.rules`); None."""
        return None

    async def approval_detail(self, params: Any, ctx: ToolContext) -> str:
        """What an approval prompt shows: the command, or the diff the change would make.

        Raises :class:`ToolError` when the call would fail anyway (nothing to approve).
        """
        return self.summary(params)

    @abstractmethod
    async def run(self, params: Any, ctx: ToolContext) -> ToolResult: ...


class ToolSource(Protocol):
    """Tools that come and go while a session runs (an MCP server's, once it is up)."""

    def offered(self) -> Sequence[Tool]:
        """The tools whose schemas the model is sent now."""
        ...

    def find(self, name: str) -> Tool | None:
        """A tool callable by name, offered or not (a deferred MCP tool the model found)."""
        ...


class ToolRegistry:
    """The built-in tools, then those of any :class:`ToolSource`; a built-in name wins."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: list[ToolSource] = []
        #: short descriptions for a small window (agentsh.context.prompt_budget)
        self.terse = False
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        for source in self._sources:
            if tool is not None:
                break
            tool = source.find(name)
        return tool

    def _offered(self) -> list[Tool]:
        tools = list(self._tools.values())
        for source in self._sources:
            tools += [tool for tool in source.offered() if tool.name not in self._tools]
        return tools

    def names(self) -> list[str]:
        return [tool.name for tool in self._offered()]

    def schemas(self) -> list[dict[str, Any]]:
        schemas = [tool.schema() for tool in self._offered()]
        if self.terse:
            from agentsh.context.prompt_budget import terse_schema

            schemas = [terse_schema(schema) for schema in schemas]
        return schemas


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


def params_json(params: Any) -> dict[str, Any]:
    """A call's parsed parameters as JSON values (what ran, for the log and the reports)."""
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(params).items()}
    if isinstance(params, Mapping):  # an MCP tool's arguments, as the server's schema took them
        return {str(k): v for k, v in params.items()}
    return {}


def _plain(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


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


# -- output limits --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Truncation:
    """A text cut to a line and byte budget, with what a note needs to say how to read on."""

    text: str
    truncated: bool
    total_lines: int
    total_bytes: int
    kept_lines: int
    kept_bytes: int
    partial_line: bool = False  # one line alone was over the byte budget and was cut


def truncate_head(text: str, *, max_lines: int, max_bytes: int) -> Truncation:
    """Keep the first whole lines that fit both budgets (read, grep, find, ls)."""
    return _truncate(text, max_lines=max_lines, max_bytes=max_bytes, keep_tail=False)


def truncate_tail(text: str, *, max_lines: int, max_bytes: int) -> Truncation:
    """Keep the last whole lines that fit both budgets (bash: the end is what matters)."""
    return _truncate(text, max_lines=max_lines, max_bytes=max_bytes, keep_tail=True)


def _truncate(text: str, *, max_lines: int, max_bytes: int, keep_tail: bool) -> Truncation:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # a final newline ends the last line; it does not start another
    total_bytes = len(text.encode("utf-8"))
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, len(lines), total_bytes, len(lines), total_bytes)
    ordered = reversed(lines) if keep_tail else iter(lines)
    kept: list[str] = []
    used = 0
    for line in ordered:
        size = len(line.encode("utf-8")) + (1 if kept else 0)
        if len(kept) >= max_lines or used + size > max_bytes:
            break
        kept.append(line)
        used += size
    partial = False
    if not kept and lines:
        # A single line is longer than the whole budget: never return nothing, cut that line.
        line = lines[-1] if keep_tail else lines[0]
        kept = [cut_tail_bytes(line, max_bytes) if keep_tail else cut_bytes(line, max_bytes)]
        used = len(kept[0].encode("utf-8"))
        partial = True
    if keep_tail:
        kept.reverse()
    return Truncation("\n".join(kept), True, len(lines), total_bytes, len(kept), used, partial)


def cut_bytes(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that fits ``max_bytes`` of UTF-8, never mid-character."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def cut_tail_bytes(text: str, max_bytes: int) -> str:
    """The longest suffix of ``text`` that fits ``max_bytes`` of UTF-8, never mid-character."""
    data = text.encode("utf-8")
    return data[max(0, len(data) - max_bytes) :].decode("utf-8", "ignore")


def format_size(size: int) -> str:
    """``512 B``, ``50.0 KB``, ``3.2 MB``: sizes as a person reads them."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    if size < 1024**3:
        return f"{size / 1024 / 1024:.1f} MB"
    return f"{size / 1024**3:.1f} GB"


# -- paths ----------------------------------------------------------------------------------


def resolve_path(raw: str, cwd: Path) -> Path:
    """A path argument as the tools use it: ``~`` expanded, relative to ``cwd``, ``..`` folded.

    Symlinks are left alone here (the approval check resolves them); folding ``..`` lexically
    keeps the path a tool writes and the path the approval checked the same one.
    """
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute():
        path = cwd / path
    return Path(os.path.normpath(path))


def display_path(path: Path, cwd: Path) -> str:
    """How a path is shown to the model: relative to ``cwd`` when inside it, else absolute."""
    try:
        rel = path.relative_to(cwd)
    except ValueError:
        return str(path)
    return "." if rel == Path() else rel.as_posix()


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it once symlinks and ``..`` are resolved."""
    return path.resolve().is_relative_to(root.resolve())


def outside_reason(path: Path, root: Path) -> str | None:
    """Why writing ``path`` counts as writing outside the project, or None if it does not.

    Outside: where it resolves (symlinks and ``..`` followed) is not under ``root``, or it is
    a file with more than one hard link: its other names may be anywhere (a uv venv's files
    are hard links into the user's cache and every other project), and a write changes them
    all. Every write check uses this, the memory tool's included."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        return f"{resolved} is outside the project root"
    try:
        info = resolved.stat()
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return (
            f"{resolved} has {info.st_nlink} hard links, and its other names may be outside "
            "the project"
        )
    return None


def missing_path_message(path: Path, cwd: Path, *, what: str = "File") -> str:
    """``File not found: x.py`` plus the similar names in the nearest existing folder."""
    shown = display_path(path, cwd)
    folder = path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    message = f"{what} not found: {shown}."
    if folder != path.parent:
        return (
            f"{message} The folder {display_path(path.parent, cwd)} does not exist either; "
            f"the nearest one that does is {display_path(folder, cwd)}."
        )
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return message
    lowered = {name.lower(): name for name in names}
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    exact_case = lowered.get(path.name.lower())
    if exact_case and exact_case not in close:
        close.insert(0, exact_case)
    if close:
        hints = ", ".join(display_path(folder / name, cwd) for name in close)
        return f"{message} Did you mean: {hints}?"
    return f"{message} Use ls or find to see what exists."
