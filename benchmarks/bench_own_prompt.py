"""agentsh's own prompt (system prompt + tool definitions) as a share of the window.

For windows of 4k, 8k, 32k, 128k and 1M tokens, in a trusted project, counted with the
``o200k_base`` encoding: with empty memory and no AGENTS.md, and with both curated-memory
files full and a 32 KB AGENTS.md. The baseline, in the same run, is the prompt at full size
(what every window got before it scaled: ``window=0``).

    .venv/bin/python benchmarks/bench_own_prompt.py

The last line is ``own_prompt_share_4k_full: <share of a 4k window, full memory> %``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchlib import window_shares

from tests.context.builders import fill_project, own_prompt

WINDOWS = (4_000, 8_000, 32_768, 128_000, 1_000_000)


def _own(project: Path, window: int, count: Callable[[str], int]) -> int:
    system, tools = own_prompt(project, window)
    return count(system) + count(json.dumps(tools, separators=(",", ":"), sort_keys=True))


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
                fill_project(project)
            full_size = _own(project, 0, counter.count)
            print(f"{case} memory: own prompt at full size {full_size:,} tokens")

            def measure(window: int, project: Path = project) -> tuple[int, str]:
                return _own(project, window, counter.count), ""

            last = window_shares(WINDOWS, full_size, measure)[0]
    print(f"own_prompt_share_4k_full: {last:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
