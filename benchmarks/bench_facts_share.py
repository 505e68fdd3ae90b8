"""The file lists a compaction keeps by code, as a share of the window.

A session that modified 150 files and read 150 more (project-relative paths of ordinary
length), rendered as the Relevant Files section for windows of 4k, 8k, 32k, 128k and 200k
tokens and counted with the ``o200k_base`` encoding. The baseline, in the same run, is the
section without a share of the window (100 paths a list, what every window got before).

    .venv/bin/python benchmarks/bench_facts_share.py

The last line is ``facts_files_share_4k: <share of a 4k window> %``.
"""

from __future__ import annotations

from benchlib import window_shares

WINDOWS = (4_000, 8_000, 32_768, 128_000, 200_000)
_PACKAGES = ("context", "session", "tools", "tui/panes", "memory", "llm")


def _paths(kind: str, count: int) -> list[str]:
    return [
        f"agentsh/{_PACKAGES[n % len(_PACKAGES)]}/{kind}_{n:03d}_helpers.py" for n in range(count)
    ]


def main() -> int:
    from agentsh.context.prompt_budget import files_chars
    from agentsh.context.summary import files_text
    from agentsh.llm.tokens import TokenCounter

    counter = TokenCounter("gpt-4o")
    counter.warm()
    modified, read = _paths("changed", 150), _paths("seen", 150)
    baseline = counter.count(files_text(read, modified))

    def measure(window: int) -> tuple[int, str]:
        section = files_text(read, modified, files_chars(window))
        return counter.count(section), f", {section.count('`') // 2} of 300 paths named"

    shares = window_shares(WINDOWS, baseline, measure)
    print(f"facts_files_share_4k: {shares[0]:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
