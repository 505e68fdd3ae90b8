"""Every request and notification ``agentsh acp`` sends, checked against the protocol's schema
as the installed ``acp`` package ships it (its pydantic models), strictly.

The package's own client is lenient, as an editor should not be trusted to be: it accepts
snake_case names beside the camelCase ones, keeps keys it does not know, and replaces a value
it cannot read with a default (a bad ``line`` becomes ``None``; a bad MCP server entry is
dropped). A real client written from the schema (Zed's serde types) would refuse or misread
such a message. So here a frame passes only when it reads by its wire names alone, holds no key
the schema lacks, and comes back the same when dumped again (nothing was salvaged).
"""

from __future__ import annotations

from typing import Any

from acp import schema
from pydantic import BaseModel

#: what the agent may send, by method, and the model of its params
AGENT_TO_CLIENT: dict[str, type[BaseModel]] = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
    "terminal/create": schema.CreateTerminalRequest,
    "terminal/output": schema.TerminalOutputRequest,
    "terminal/release": schema.ReleaseTerminalRequest,
    "terminal/wait_for_exit": schema.WaitForTerminalExitRequest,
    "terminal/kill": schema.KillTerminalRequest,
}


#: what the agent answers, by the method of the client's request, and the model of its result
AGENT_RESULTS: dict[str, type[BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/fork": schema.ForkSessionResponse,
    "session/close": schema.CloseSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/prompt": schema.PromptResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
}


def _extra_keys(value: Any, where: str) -> list[str]:
    """The keys the schema does not know, anywhere inside a validated model."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{where}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += _extra_keys(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += _extra_keys(item, f"{where}[{i}]")
    return found


def schema_problems(frame: dict[str, Any], asked: dict[Any, str] | None = None) -> list[str]:
    """Why ``frame`` (a request, a notification or a response from the agent) is not what the
    schema says; empty when it is. ``asked``: the method of each request the client sent, by
    id (a response to a request not in it, such as a raw line a test wrote, is not checked)."""
    method = frame.get("method")
    if method is None:
        return _response_problems(frame, asked or {})
    model = AGENT_TO_CLIENT.get(method)
    if model is None:
        return [f"{method}: not a method an agent sends"]
    return _read_strictly(model, frame.get("params"), method)


def _response_problems(frame: dict[str, Any], asked: dict[Any, str]) -> list[str]:
    method = asked.get(frame.get("id"))
    if method is None:
        return []
    if "error" in frame:
        error = frame["error"]
        good = (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        )
        return [] if good else [f"{method}: a malformed error {error!r:.300}"]
    model = AGENT_RESULTS.get(method)
    if model is None:
        return []
    return _read_strictly(model, frame.get("result"), f"{method} result")


def _read_strictly(model: type[BaseModel], params: Any, method: str) -> list[str]:
    try:
        read = model.model_validate(params, by_alias=True, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError
        return [f"{method}: {exc}"]
    problems = [f"{method}: unknown key {key}" for key in _extra_keys(read, "params")]
    if read.model_dump(mode="json", by_alias=True, exclude_unset=True) != params:
        problems.append(f"{method}: a value was not what the schema allows: {params!r:.600}")
    return problems
