"""agentsh's own prompt scales with the window: terse tool definitions, the short instructions
and budgeted memory / AGENTS.md on a small one, everything at full size on a large one."""

from __future__ import annotations

import json
from pathlib import Path

from agentsh.config import MemorySettings, load_environment
from agentsh.context.prompt_budget import PromptBudget, first_sentence, fit_memory
from agentsh.memory.curated import CuratedMemory, MemoryTarget
from agentsh.system_prompt import QUOTED_DATA_RULE, SystemPrompt
from agentsh.tools.base import ToolRegistry
from agentsh.tools.builtin import builtin_tools


def _size(schemas: list[dict[str, object]]) -> int:
    return len(json.dumps(schemas, separators=(",", ":")))


def test_terse_tool_definitions_keep_what_the_model_must_get_right() -> None:
    registry = ToolRegistry(builtin_tools())
    full = registry.schemas()
    registry.terse = True
    terse = registry.schemas()
    assert _size(terse) < 0.6 * _size(full)
    for long, short in zip(full, terse, strict=True):
        lf, sf = long["function"], short["function"]
        assert sf["name"] == lf["name"]
        assert sf["description"] and lf["description"].startswith(sf["description"][:20])
        assert sf["parameters"].get("required", []) == lf["parameters"]["required"]
        for name, prop in lf["parameters"]["properties"].items():
            kept = sf["parameters"]["properties"][name]
            assert {k: v for k, v in prop.items() if k != "description"} == kept
    assert full == ToolRegistry(builtin_tools()).schemas()  # the originals are untouched


def test_first_sentence_cuts_at_a_sentence_not_at_an_abbreviation() -> None:
    assert first_sentence("Read a file. Long files come in pages.", 100) == "Read a file"
    assert first_sentence("Only files matching a glob, e.g. '*.py'.", 100) == (
        "Only files matching a glob, e.g. '*.py'"
    )
    assert first_sentence("Search saved memory (notes, summaries) by meaning", 100) == (
        "Search saved memory"
    )
    # Seen in a 4k session: "Search saved memory (MEMORY.md, USER.md" (cut inside the parenthesis)
    assert first_sentence("Search saved memory (MEMORY.md, USER.md, docs) by meaning", 40) == (
        "Search saved memory"
    )
    long = "Save facts to memory, which later sessions see in their prompt and use"
    assert first_sentence(long, 40) == "Save facts to memory"


def test_the_budget_scales_with_the_window_and_never_exceeds_the_settings() -> None:
    settings = MemorySettings()
    small, large = (
        PromptBudget.for_window(4_000, settings),
        PromptBudget.for_window(10**6, settings),
    )
    assert small.terse and not large.terse
    assert small.memory_chars is not None and small.memory_chars < 1_000
    assert small.instructions_bytes < 1_000 < large.instructions_bytes
    assert large.instructions_bytes == settings.agents_md_max_bytes
    assert large.prior_knowledge_docs == settings.prior_knowledge_docs
    assert small.prior_knowledge_docs <= 1
    unknown = PromptBudget.for_window(0, settings)
    assert not unknown.terse and unknown.memory_chars is None


def test_memory_is_cut_at_an_entry_with_a_note() -> None:
    rendered = "# Memory\n\n## MEMORY.md\n" + "\n§\n".join(
        f"entry {n} " + "x" * 60 for n in range(40)
    )
    cut = fit_memory(rendered, 600, "§")
    assert len(cut) <= 600
    assert "cut to fit" in cut
    body = cut.split("\n(Memory cut")[0]
    assert body.rstrip().endswith("x" * 60)  # whole entries only
    assert fit_memory(rendered, None, "§") == rendered


def test_a_small_window_gets_the_short_instructions_and_keeps_the_quoted_data_rule(
    project: Path,
) -> None:
    env = load_environment(project)
    memory = CuratedMemory(env.project, env.user, env.settings.memory)
    for n in range(30):
        memory.add(MemoryTarget.MEMORY, f"fact {n}: the build uses make target t{n}")
    small = SystemPrompt(env, project, memory=memory, window=4_000).render()
    large = SystemPrompt(env, project, memory=memory, window=200_000).render()
    assert QUOTED_DATA_RULE in small and QUOTED_DATA_RULE in large
    assert len(small) < 0.6 * len(large)
    assert "fact 0:" in small and "fact 29:" in large and "fact 29:" not in small
    assert "cut to fit this model's small window" in small
    # The same window renders the same bytes (the provider's prefix cache).
    again = SystemPrompt(env, project, memory=memory, window=4_000)
    assert again.render() == small and again.fresh().render() == small
