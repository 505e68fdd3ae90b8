"""Counting and estimating tokens.

:func:`estimate_tokens` is the CJK-aware estimate of SPEC §4 (a CJK character is one token,
other text four characters per token); it lives in :mod:`agentsh.text` (standard library
only, so the UI thread and the memory chunker use it without the model door) and is
re-exported here. :class:`TokenCounter` counts exactly with tiktoken, using the encoding
files litellm ships (o200k_base for the gpt-4o / o / gpt-4.1 / gpt-5 families, cl100k_base
otherwise). tiktoken is imported and an encoding loaded only on the first count, never
downloaded: when the file is not on disk the counter falls back to the estimate. Importing
this module imports neither tiktoken nor litellm.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentsh.text import estimate_tokens

__all__ = ["TokenCounter", "encoding_name_for", "estimate_tokens"]

# ---------------------------------------------------------------------------------------------
# Exact counting

_O200K_MODEL = re.compile(
    r"(^|/)(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o[1-9](-|$)|codex)", re.IGNORECASE
)
_ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
# Chat-format overheads (OpenAI's published recipe): each message costs a few tokens for its
# role and separators, and the reply is primed with a few more.
_PER_MESSAGE = 3
_PER_NAME = 1
_REPLY_PRIMING = 3
_PER_TOOL_CALL = 3
_IMAGE_TOKENS = 765  # one high-detail 512px tile set; images are rare in a coding session


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


_encodings: dict[str, _Encoding | None] = {}
_encodings_lock = threading.Lock()


def encoding_name_for(model: str) -> str:
    """The tiktoken encoding used to count ``model``'s tokens."""
    return "o200k_base" if _O200K_MODEL.search(model) else "cl100k_base"


def _load_encoding(name: str) -> _Encoding | None:
    """The encoding from litellm's shipped files, or ``None`` when it is not on disk.

    Checked before tiktoken sees it: tiktoken downloads a missing or corrupt file, and counting
    must never wait on the network (SPEC §4).
    """
    with _encodings_lock:
        if name in _encodings:
            return _encodings[name]
        encoding: _Encoding | None = None
        from agentsh.llm.env import tokenizer_dir

        folder = tokenizer_dir()  # also sets TIKTOKEN_CACHE_DIR before tiktoken is imported
        url = _ENCODING_URLS.get(name)
        if folder is not None and url is not None:
            path = folder / hashlib.sha1(url.encode()).hexdigest()
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            if data and hashlib.sha256(data).hexdigest() == _ENCODING_SHA256[name]:
                import tiktoken

                try:
                    encoding = tiktoken.get_encoding(name)
                except (OSError, ValueError):
                    encoding = None
        _encodings[name] = encoding
        return encoding


class TokenCounter:
    """Counts tokens for one model with tiktoken; the CJK-aware estimate when that is not possible.

    Loading happens on the first count (0.3-1 s for o200k_base), so the UI thread should count
    through a worker or call :meth:`warm` in one first. Thread-safe.
    """

    __slots__ = ("_chars_per_token", "_encoding", "_loaded", "encoding_name", "model")

    def __init__(self, model: str, *, chars_per_token: float = 4.0) -> None:
        self.model = model
        self.encoding_name = encoding_name_for(model)
        self._chars_per_token = chars_per_token
        self._encoding: _Encoding | None = None
        self._loaded = False

    def warm(self) -> bool:
        """Load the encoding now; True when exact counting is available."""
        return self._get() is not None

    @property
    def exact(self) -> bool:
        return self._get() is not None

    def _get(self) -> _Encoding | None:
        if not self._loaded:
            self._encoding = _load_encoding(self.encoding_name)
            self._loaded = True
        return self._encoding

    def count(self, text: str) -> int:
        if not text:
            return 0
        encoding = self._get()
        if encoding is None:
            return estimate_tokens(text, self._chars_per_token)
        return len(encoding.encode_ordinary(text))

    def count_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Tokens of a chat request: OpenAI-format messages plus tool schemas."""
        total = _REPLY_PRIMING if messages else 0
        for message in messages:
            total += _PER_MESSAGE + self._content_tokens(message.get("content"))
            if message.get("name"):
                total += _PER_NAME + self.count(str(message["name"]))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                total += _PER_TOOL_CALL + self.count(str(function.get("name", "")))
                total += self.count(str(function.get("arguments", "")))
            if message.get("tool_call_id"):
                total += self.count(str(message["tool_call_id"]))
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str):
                total += self.count(reasoning)
        if tools:
            total += self.count(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")))
        return total

    def _content_tokens(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count(content)
        if isinstance(content, list):
            total = 0
            for part in content:
                if not isinstance(part, Mapping):
                    total += self.count(str(part))
                elif part.get("type") == "text":
                    total += self.count(str(part.get("text", "")))
                elif part.get("type") in ("image_url", "image"):
                    total += _IMAGE_TOKENS
                else:
                    total += self.count(json.dumps(part, ensure_ascii=False))
            return total
        return self.count(str(content))
