"""Text helpers every layer may use: CJK detection, the CJK-aware token estimate, and the
block piped text is attached to a prompt in.

SPEC §4 counts a CJK character as one token and other text as four characters a token, until
an exact count (tiktoken, in :mod:`agentsh.llm.tokens`) is available. The memory chunker,
the search index and the context engine need the same notion of "CJK", so it is defined
once, here, below all of them. ``agentsh -p PROMPT`` with text piped in sends the prompt with
the text after it in a ``<stdin>`` block (:func:`attach_piped`); the session catalog titles
the session with the prompt alone (:func:`prompt_of`). Standard library only.
"""

from __future__ import annotations

import functools
import math
import re


@functools.cache
def _cjk() -> re.Pattern[str]:
    """Hangul (syllables, jamo, compatibility jamo), kana, CJK ideographs (with extension A and
    compatibility ideographs), CJK punctuation, and fullwidth forms. Compiled at first use:
    its wide ranges take 8-18 ms to compile, which every process importing this module (the
    TUI before its first frame, each command line) paid whether it met such text or not."""
    return re.compile(
        "[\u1100-\u11ff\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
        "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
    )


def cjk_count(text: str) -> int:
    return len(_cjk().findall(text))


def estimate_tokens(text: str, chars_per_token: float = 4.0) -> int:
    """CJK characters count one token each; the rest ``chars_per_token`` characters a token."""
    if not text:
        return 0
    cjk = cjk_count(text) if not text.isascii() else 0
    return cjk + math.ceil((len(text) - cjk) / chars_per_token)


def is_cjk_char(char: str) -> bool:
    return bool(_cjk().match(char))


_PIPED_OPEN = "\n\n<stdin>\n"
_PIPED_CLOSE = "\n</stdin>"


def attach_piped(prompt: str, piped: str) -> str:
    """The prompt with piped text after it, marked as what it is so the model can tell the
    request from the material (``git diff | agentsh -p "review this"``)."""
    body = piped.rstrip("\n")
    if not body.strip():
        return prompt
    return f"{prompt.rstrip()}{_PIPED_OPEN}{body}{_PIPED_CLOSE}"


def has_piped(message: str) -> bool:
    """Whether ``message`` (perhaps cut short) holds a piped block :func:`attach_piped` put."""
    return _PIPED_OPEN in message


def prompt_of(message: str) -> str:
    """What the user asked in ``message``: without the piped block :func:`attach_piped` put
    at its end (the whole message when there is none, or nothing before it)."""
    if not message.endswith(_PIPED_CLOSE):
        return message
    at = message.find(_PIPED_OPEN)
    asked = message[:at] if at >= 0 else ""
    return asked if asked.strip() else message
