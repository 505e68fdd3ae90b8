"""What the file checkpoint taken at each user message costs on a 10,000-file git repository.

Same run as the tool-call benchmark (10 user messages, 3 edits each, real agent and scripted
server); the figure is the median of the user-message checkpoints (the first capture of a
project, which reads every file once to check it against the git index, starts in the
background when the agent is built and is printed apart: here, the wait for it to finish).
Baseline in the same run: ``git status --porcelain`` on the same repository.

    .venv/bin/python benchmarks/bench_checkpoint_user_message.py [--files N]
"""

from __future__ import annotations

import argparse

from checkpoint_bench import per_call_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    figures = per_call_figures(args.files, prompts=10, calls_per_prompt=3)
    print(f"files: {int(figures['files'])}")
    print(f"first capture of the project (once): {figures['first_capture_ms']:.0f} ms")
    print(f"baseline git_status_p50: {figures['git_status_ms']:.1f} ms")
    print(f"checkpoint_per_user_message_p50: {figures['user_ms']:.1f} ms")


if __name__ == "__main__":
    main()
