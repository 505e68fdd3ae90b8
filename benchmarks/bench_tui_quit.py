"""Quitting the TUI (Ctrl+Q until the process has exited), beside a bare Textual app's quit.

Three cases, interleaved in the same run, each in a fresh 120x40 tmux pane: the bare Textual
app (Header, TextArea, Footer) quit with Ctrl+Q once it is ready; agentsh quit while its agent
is still loading (Ctrl+Q at its first frame, with a first start's empty home, so the load is
long); agentsh quit once the agent is ready and a message typed (the model worker is up). The
time is from the key until the pane's process has exited (the shell prompt would be back);
every process under agentsh (the model worker, MCP servers) is checked to be gone, and the
session log to hold what was typed before quitting. No MCP servers: bench_mcp_quit covers them.
Medians of ``--runs`` runs (one warm-up each).

    .venv/bin/python benchmarks/bench_tui_quit.py [--runs 5]

The last line is ``tui_quit_loading_seconds: <median> s``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchlib import (
    BARE_APP,
    agentsh_command,
    bench_env,
    git_project,
    median,
    print_medians,
    quit_pane,
)

from tests.e2e.tmux import TmuxPane, tmux_available


def _bare(bare: Path, project: Path, home: Path) -> float:
    with TmuxPane([sys.executable, str(bare)], cwd=project, env=bench_env(home)) as pane:
        pane.wait_for(lambda s: "^p" in s, timeout=30)
        return quit_pane(pane, "C-q")


def _loading(project: Path, home: Path) -> float:
    with TmuxPane(agentsh_command(), cwd=project, env=bench_env(home)) as pane:
        pane.wait_for(lambda s: "loading…" in s, timeout=30, poll=0.005)
        return quit_pane(pane, "C-q")


def _ready(project: Path, home: Path) -> float:
    with TmuxPane(agentsh_command(), cwd=project, env=bench_env(home)) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s and "│" in s, timeout=120)
        pane.type("a draft kept in the prompt history")  # starts the model worker
        time.sleep(1.0)
        return quit_pane(pane, "C-q")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {"bare": [], "loading": [], "ready": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        bare = base / "bare.py"
        bare.write_text(BARE_APP)
        project = git_project(base / "project")
        for run in range(args.runs + 1):
            homes = {name: base / f"{name}-{run}" for name in times}
            for home in homes.values():
                home.mkdir()
            measured = {
                "bare": _bare(bare, project, homes["bare"]),
                "loading": _loading(project, homes["loading"]),
                "ready": _ready(project, homes["ready"]),
            }
            if run:  # the first run warms the file cache
                for name, seconds in measured.items():
                    times[name].append(seconds)
    print_medians(
        [
            ("bare Textual app, Ctrl+Q", times["bare"]),
            ("agentsh, Ctrl+Q while the agent loads", times["loading"]),
            ("agentsh, Ctrl+Q with the agent and worker up", times["ready"]),
        ]
    )
    print(f"tui_quit_ready_seconds: {median(times['ready']):.3f} s")
    print(f"tui_quit_loading_seconds: {median(times['loading']):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
