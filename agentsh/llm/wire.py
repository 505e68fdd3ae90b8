"""The messages between a front end and its model worker: one JSON object per line.

The front end (:mod:`agentsh.llm.remote`) sends requests, each with an ``id``; the worker
(:mod:`agentsh.llm.worker`) answers with any number of ``ev`` messages for that id and ends it
with exactly one ``done``, ``error`` (an :class:`LLMError`) or ``failed`` (anything else).
Once, unasked and without an id, the worker says ``{"ev": "ready"}`` when its litellm import
is over (a call opened before that waited for it, not for the model).
Encoding goes through the dataclasses' own fields, so a field added to :class:`Completion`,
:class:`Usage` or an event travels without a change here. Decoding accepts only the event
types listed below. Nothing here imports litellm.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agentsh.config import ModelSettings
from agentsh.events import (
    ErrorKind,
    ModelClientReady,
    ModelClientStarting,
    Retrying,
    TextDelta,
    TextEnded,
    ThinkingDelta,
    ToolCallDelta,
)
from agentsh.llm.client import Completion, LLMError, StreamItem
from agentsh.llm.models import ModelInfo
from agentsh.values import StopReason, ToolCall, Usage

# The stream events a worker may send, by wire name.
WireEvent = TextDelta | ThinkingDelta | ToolCallDelta | TextEnded | Retrying
EVENTS: dict[str, type[WireEvent]] = {
    "text": TextDelta,
    "thinking": ThinkingDelta,
    "tool": ToolCallDelta,
    "text_end": TextEnded,
    "retrying": Retrying,
}
_NAMES = {cls: name for name, cls in EVENTS.items()}


def dumps(message: dict[str, Any]) -> bytes:
    """One line of the protocol: compact JSON, newline-terminated."""
    # ASCII escapes keep any lone surrogate (undecodable tool output) intact, as httpx does.
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


# -- stream items --------------------------------------------------------------------------------


def encode_item(call_id: int, item: StreamItem) -> dict[str, Any]:
    if isinstance(item, Completion):
        return {"id": call_id, "ev": "done", "value": encode_completion(item)}
    if isinstance(item, ModelClientStarting | ModelClientReady):
        # The front end's own notes about the worker; the worker's client never yields them.
        raise TypeError(f"{type(item).__name__} is not sent by the worker")
    return {"id": call_id, "ev": _NAMES[type(item)], **_fields(item)}


def decode_event(message: dict[str, Any]) -> WireEvent:
    cls = EVENTS[message["ev"]]
    return cls(**{f.name: message[f.name] for f in dataclasses.fields(cls)})


def encode_completion(completion: Completion) -> dict[str, Any]:
    value = _fields(completion)
    value["tool_calls"] = [_fields(call) for call in completion.tool_calls]
    value["usage"] = _fields(completion.usage)
    value["stop_reason"] = completion.stop_reason.value
    return value


def decode_completion(value: dict[str, Any]) -> Completion:
    return Completion(
        **{
            **value,
            "tool_calls": tuple(ToolCall(**call) for call in value["tool_calls"]),
            "usage": Usage(**value["usage"]),
            "stop_reason": StopReason(value["stop_reason"]),
        }
    )


# -- errors ----------------------------------------------------------------------------------------


def encode_error(call_id: int, error: LLMError) -> dict[str, Any]:
    return {
        "id": call_id,
        "ev": "error",
        "kind": error.kind.value,
        "message": error.message,
        "status": error.status,
        "retry_after": error.retry_after,
    }


def decode_error(message: dict[str, Any]) -> LLMError:
    return LLMError(
        ErrorKind(message["kind"]),
        str(message["message"]),
        message.get("status"),
        message.get("retry_after"),
    )


def failure(call_id: int, kind: str, text: str) -> dict[str, Any]:
    """Anything but an :class:`LLMError`: ``kind`` is "embedding" or "internal"."""
    return {"id": call_id, "ev": "failed", "kind": kind, "message": text}


# -- the client a request is made for --------------------------------------------------------------


def encode_client(
    model: str,
    settings: ModelSettings,
    api_base: str | None,
    api_key: str | None,
    fallback_model: str | None = None,
) -> dict[str, Any]:
    return {
        "model": model,
        "settings": _fields(settings),
        "api_base": api_base,
        "api_key": api_key,
        "fallback_model": fallback_model,
    }


def decode_settings(value: dict[str, Any]) -> ModelSettings:
    return ModelSettings(**value)


def encode_info(info: ModelInfo) -> dict[str, Any]:
    return _fields(info)


def decode_info(value: dict[str, Any]) -> ModelInfo:
    return ModelInfo(**value)


def encode_usage(usage: Usage) -> dict[str, Any]:
    return _fields(usage)
