"""What file checkpoints cost per tool call on a 10,000-file git repository (goal < 50 ms p50).

The real agent edits one file per call (30 calls over 10 user messages) through the scripted
server; each file-changing call is checkpointed before and after, and the figure is the median
of the two together (listing, stat of every file, reading the changed one, the store
transaction, the session record). Baseline in the same run: ``git status --porcelain`` on the
same repository, which stats the same files.

    .venv/bin/python benchmarks/bench_checkpoint_tool_call.py [--files N]
"""

from __future__ import annotations

import argparse

from checkpoint_bench import per_call_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    figures = per_call_figures(args.files, prompts=10, calls_per_prompt=3)
    print(f"files: {int(figures['files'])}, tool calls measured: {int(figures['calls'])}")
    print(f"first capture of the project (once): {figures['first_capture_ms']:.0f} ms")
    print(f"baseline git_status_p50: {figures['git_status_ms']:.1f} ms")
    ratio = figures["tool_call_ms"] / figures["git_status_ms"]
    print(f"checkpoint per tool call / git status: {ratio:.2f}")
    print(f"checkpoint_per_tool_call_p50: {figures['tool_call_ms']:.1f} ms")


if __name__ == "__main__":
    main()
