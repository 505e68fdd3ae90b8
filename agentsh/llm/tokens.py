"""Counting and estimating tokens.

:func:`estimate_tokens` is the CJK-aware estimate of SPEC §4 (a CJK character is one token,
other text four characters per token). It is pure Python with no imports beyond the standard
library, so the UI thread and the chunker can call it freely. Exact counting with tiktoken
(using the encoding files litellm ships, never a download) is added by :class:`TokenCounter`.
"""

from __future__ import annotations

import math
import re

# Hangul (syllables, jamo, compatibility jamo), kana, CJK ideographs (with extension A and
# compatibility ideographs), CJK punctuation, and fullwidth forms.
_CJK = re.compile(
    "[\u1100-\u11ff\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def estimate_tokens(text: str, chars_per_token: float = 4.0) -> int:
    """CJK characters count one token each; the rest ``chars_per_token`` characters a token."""
    if not text:
        return 0
    cjk = cjk_count(text) if not text.isascii() else 0
    return cjk + math.ceil((len(text) - cjk) / chars_per_token)


def is_cjk_char(char: str) -> bool:
    return bool(_CJK.match(char))
