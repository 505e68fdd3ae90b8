"""agentsh's own prompt (system prompt + tool definitions) as a share of the window.

For windows of 4k, 8k, 32k, 128k and 1M tokens, in a trusted project, counted with the
``o200k_base`` encoding: with empty memory and no AGENTS.md, and with both curated-memory
files full and a 32 KB AGENTS.md. The baseline, in the same run, is the prompt at full size
(what every window got before it scaled: ``window=0``).

    .venv/bin/python benchmarks/bench_own_prompt.py

The last line is ``own_prompt_share_4k_full: <share of a 4k window, full memory> %``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WINDOWS = (4_000, 8_000, 32_768, 128_000, 1_000_000)


def _fill(project: Path) -> None:
    from agentsh.config import load_environment
    from agentsh.memory.curated import CuratedMemory, MemoryTarget

    (project / "AGENTS.md").write_text(
        ("Use ruff and pytest; keep functions typed. " * 800)[:32_000]
    )
    env = load_environment(project)
    memory = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=True)
    for target, limit in (
        (MemoryTarget.MEMORY, env.settings.memory.memory_char_limit),
        (MemoryTarget.USER, env.settings.memory.user_char_limit),
    ):
        n = 0
        while memory.snapshot().get(target).chars < limit - 80:
            n += 1
            memory.add(target, f"fact {n}: the build uses make target t{n} with flag x{n}")


def _own(project: Path, window: int, count: Callable[[str], int]) -> int:
    from agentsh.config import load_environment
    from agentsh.memory.curated import CuratedMemory
    from agentsh.system_prompt import SystemPrompt
    from agentsh.tools.base import ToolRegistry
    from agentsh.tools.builtin import session_tools
    from agentsh.tools.memory import MemoryTool

    env = dataclasses.replace(load_environment(project), trusted=True)
    memory = CuratedMemory(env.project, env.user, env.settings.memory, project_trusted=True)
    prompt = SystemPrompt(env, project, memory=memory, window=window)
    registry = ToolRegistry(session_tools(MemoryTool(memory, env.settings.memory)))
    registry.terse = prompt.budget.terse
    schemas = json.dumps(registry.schemas(), separators=(",", ":"), sort_keys=True)
    return count(prompt.render()) + count(schemas)


def main() -> int:
    from agentsh.llm.tokens import TokenCounter

    counter = TokenCounter("gpt-4o")
    counter.warm()
    last = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENTSH_HOME"] = str(Path(tmp) / "home")
        for case in ("empty", "full"):
            project = Path(tmp) / case
            project.mkdir()
            os.chdir(project)
            if case == "full":
                _fill(project)
            full_size = _own(project, 0, counter.count)
            print(f"{case} memory: own prompt at full size {full_size:,} tokens")
            for window in WINDOWS:
                own = _own(project, window, counter.count)
                before, after = 100 * full_size / window, 100 * own / window
                print(
                    f"  {window:>9,}: {full_size:>6,} ({before:5.1f} %)"
                    f" -> {own:>6,} ({after:5.1f} %)"
                )
                if window == WINDOWS[0]:
                    last = after
    print(f"own_prompt_share_4k_full: {last:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
