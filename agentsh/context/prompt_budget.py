"""What agentsh's own prompt may take of the window, so the tiers keep their meaning on a small one.

The system prompt and the tool definitions are sent with every request. At full size they are
~1,900 tokens, plus up to ~1,800 for a full curated memory and up to 8,000 for AGENTS.md files:
nothing on a 128k window, but ~47-55 % of a 4k one, where the tiers at 80 % then left the
conversation a quarter of the window. So the parts scale with the window instead:

- below :data:`SMALL_WINDOW` the tool definitions are terse (each description cut to its first
  sentence, the parameters' left out) and the base instructions and memory heading are short;
- the curated-memory snapshot, the AGENTS.md files (nested ones included) and the
  prior-knowledge docs each get a share of the window, never more than their own settings allow.

The file lists a compaction keeps by code (:mod:`agentsh.context.facts`) get a share of the window
too: on a 4k window 100 paths each took 19-30 % of it, depending on their length.

Everything is decided once per window, so the prompt stays byte-stable between requests (the
provider's prefix cache) and only a model change with another window changes it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from agentsh.config import MemorySettings

SMALL_WINDOW = 16_000  # tokens; below it the terse tool definitions and short instructions
MEMORY_SHARE = 0.04  # of the window, for the curated-memory snapshot
INSTRUCTIONS_SHARE = 0.05  # for the AGENTS.md files of the whole session
PRIOR_KNOWLEDGE_SHARE = 0.04  # for the prior-knowledge docs of the first message
FILES_SHARE = 0.04  # for the read and modified file lists kept by code after a compaction
REQUEST_SHARE = 0.05  # for the newest request's copy in the Active Task section
REQUEST_MIN_CHARS = 400
_DOC_OVERHEAD_CHARS = 120  # a prior-knowledge doc's heading and fence
_DESCRIPTION_CHARS = 110  # a terse tool description at most


@dataclass(frozen=True, slots=True)
class PromptBudget:
    """The size of each part of the own prompt for one window (characters or bytes)."""

    window: int
    terse: bool  # short instructions, terse tool definitions
    memory_chars: int | None  # the rendered memory snapshot at most; None: no cap of its own
    instructions_bytes: int  # AGENTS.md files, as their loader counts them
    prior_knowledge_docs: int

    @classmethod
    def for_window(
        cls, window: int, memory: MemorySettings, chars_per_token: float = 4.0
    ) -> PromptBudget:
        """The budget on ``window`` tokens (0 or less: unknown, treated as large)."""
        if window <= 0:
            return cls(window, False, None, memory.agents_md_max_bytes, memory.prior_knowledge_docs)
        chars = window * chars_per_token
        per_doc = memory.prior_knowledge_chars + _DOC_OVERHEAD_CHARS
        return cls(
            window=window,
            terse=window < SMALL_WINDOW,
            memory_chars=int(chars * MEMORY_SHARE),
            instructions_bytes=min(memory.agents_md_max_bytes, int(chars * INSTRUCTIONS_SHARE)),
            prior_knowledge_docs=min(
                memory.prior_knowledge_docs, int(chars * PRIOR_KNOWLEDGE_SHARE) // per_doc
            ),
        )


def files_chars(window: int, chars_per_token: float = 3.0) -> int | None:
    """The characters both code-kept file lists may take together on ``window`` tokens; None
    (an unknown window): only their own cap of paths applies. Paths are dense (~3.3 characters
    a token with ``o200k_base``), hence 3 by default. From ~128k tokens up ordinary paths never
    reach it, so a large window lists as many as before (100 a list)."""
    return int(window * chars_per_token * FILES_SHARE) if window > 0 else None


def request_chars(window: int, chars_per_token: float = 4.0) -> int | None:
    """The characters the Active Task section may copy of the newest request on ``window``
    tokens (at least :data:`REQUEST_MIN_CHARS`); None (an unknown window): only the 8,000 of
    :func:`agentsh.context.summary.active_task_text`. 800 on 4k, 6,553 on 32k."""
    if window <= 0:
        return None
    return max(REQUEST_MIN_CHARS, int(window * chars_per_token * REQUEST_SHARE))


def fit_memory(rendered: str, max_chars: int | None, separator: str) -> str:
    """The memory block cut to ``max_chars`` at an entry's end (a line holding only
    ``separator``, or a section heading), with a note saying so; unchanged when it fits."""
    if max_chars is None or len(rendered) <= max_chars:
        return rendered
    note = (
        "\n(Memory cut to fit this model's small window: "
        f"{len(rendered):,} chars in all; the memory tool still edits every entry.)\n"
    )
    room = max(0, max_chars - len(note))
    head = rendered[:room]
    cut = max(head.rfind(f"\n{separator}\n"), head.rfind("\n## "))
    head = head[:cut] if cut > 0 else head[: head.rfind("\n") + 1]
    return head.rstrip() + "\n" + note


_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'`])(?<!e\.g)(?<!i\.e)[.;](?=\s|$)|\s\(")


def first_sentence(text: str, limit: int) -> str:
    """``text`` up to its first sentence's end (or parenthesis); a longer one is cut at its
    last comma, or word, within ``limit`` characters."""
    text = " ".join(text.split())
    match = _SENTENCE_END.search(text)
    if match is not None:
        text = text[: match.start()]
    if len(text) > limit:
        head = text[:limit]
        comma = head.rfind(",")
        text = head[:comma] if comma >= limit // 3 else head.rsplit(" ", 1)[0]
    return text.rstrip(" ,;:.")


def terse_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style function schema with the tool's description cut to its first sentence
    and the parameters' descriptions (and ``additionalProperties``) left out: names, types,
    enums, bounds and required fields stay (what the model must get right)."""
    terse = copy.deepcopy(schema)
    function = terse.get("function")
    if not isinstance(function, dict):
        return terse
    if isinstance(function.get("description"), str):
        function["description"] = first_sentence(function["description"], _DESCRIPTION_CHARS)
    _drop_descriptions(function.get("parameters"))
    return terse


def _drop_descriptions(node: Any) -> None:
    if not isinstance(node, dict):
        return
    node.pop("additionalProperties", None)  # unknown arguments are refused by the tool anyway
    if node.get("required") == []:
        del node["required"]
    properties = node.get("properties")
    if isinstance(properties, dict):
        for prop in properties.values():
            if isinstance(prop, dict):
                prop.pop("description", None)
                _drop_descriptions(prop)
    _drop_descriptions(node.get("items"))
