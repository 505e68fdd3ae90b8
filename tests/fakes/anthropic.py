"""The Anthropic Messages API for the scripted server (``POST /v1/messages``), with its cache.

Requests are recorded like chat completions; replies come from the same script (text, tool
calls, scripted usage), streamed as Anthropic's events (``message_start``,
``content_block_start``/``_delta``/``_stop``, ``message_delta``, ``message_stop``) or as one
JSON message. The prompt cache is simulated the way Anthropic documents it, so a test can see
what agentsh's markers buy: the prompt is a sequence of blocks (tools, system, then each
message's content blocks); a block carrying ``cache_control`` is a breakpoint; a breakpoint
whose prefix (without the markers) was written by an earlier request, or one of the 20 block
boundaries before it, is read from the cache; the prefix up to the last breakpoint is written.
Usage reports ``input_tokens`` (neither read nor written), ``cache_read_input_tokens`` and
``cache_creation_input_tokens``; tokens are characters / 4, as for chat completions.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

LOOKBACK_BLOCKS = 20


def _estimate(chars: int) -> int:
    return max(1, (chars + 3) // 4)


def without_markers(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: without_markers(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, list):
        return [without_markers(v) for v in block]
    return block


def prompt_blocks(body: dict[str, Any]) -> Iterator[tuple[Any, bool]]:
    """(block, is a breakpoint) in the order the prompt is read: tools, system, messages."""
    for tool in body.get("tools") or ():
        yield tool, isinstance(tool, dict) and "cache_control" in tool
    system = body.get("system")
    if isinstance(system, str) and system:
        yield {"type": "text", "text": system}, False
    for block in system if isinstance(system, list) else ():
        yield block, isinstance(block, dict) and "cache_control" in block
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, str):
            yield {"role": message.get("role"), "text": content}, False
            continue
        for block in content or ():
            marked = isinstance(block, dict) and "cache_control" in block
            yield {"role": message.get("role"), **without_markers(block)}, marked


def cache_markers(body: dict[str, Any]) -> int:
    return sum(1 for _block, marked in prompt_blocks(body) if marked)


class PromptCache:
    """Which prompt prefixes were written, by hash; thread-safe."""

    def __init__(self) -> None:
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = list(prompt_blocks(body))
        sizes: list[int] = []  # tokens up to and including block i
        keys: list[str] = []
        digest = hashlib.sha256()
        total = 0
        for block, _marked in blocks:
            text = json.dumps(without_markers(block), sort_keys=True)
            digest.update(text.encode())
            total += _estimate(len(text))
            sizes.append(total)
            keys.append(digest.copy().hexdigest())
        breakpoints = [i for i, (_block, marked) in enumerate(blocks) if marked]
        read = 0
        with self._lock:
            for point in breakpoints:
                for i in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                    if keys[i] in self._written:
                        read = max(read, sizes[i])
                        break
            written = 0
            if breakpoints:
                last = breakpoints[-1]
                if keys[last] not in self._written:
                    written = max(0, sizes[last] - read)
                for point in breakpoints:
                    self._written.add(keys[point])
        return {
            "input_tokens": max(0, total - read - written),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }


def message_json(model: str, text: str, calls: list[tuple[str, str, Any]], stop: str,
                 usage: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def stream_events(
    model: str,
    pieces: list[str],
    calls: list[tuple[str, str, list[str]]],
    stop: str,
    usage: dict[str, int],
    output_tokens: int,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) of one streamed message: text pieces, then each tool call's JSON
    in pieces."""
    start = {**usage, "output_tokens": 1}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {**message_json(model, "", [], "", start), "stop_reason": None},
        },
    )
    index = 0
    if pieces:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
        for piece in pieces:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    for call_id, name, parts in calls:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        )
        for part in parts:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": part},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


Send = Callable[[str, dict[str, Any]], None]
