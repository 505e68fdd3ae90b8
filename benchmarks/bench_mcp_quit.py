"""Quitting the TUI with four MCP servers configured, beside quitting it with none.

The real TUI runs in a 120x40 tmux pane with four stdio servers (the fake test server twice,
``mcp-server-time``, ``mcp-server-git``) and, interleaved in the same run, with none. Once the
agent has loaded and the servers' tools are ready (the status bar's ``mcp`` count), and a
second more, ``/quit`` is sent; the time is from
the Enter until the agentsh process has exited, and every server's process group is checked
to be gone. Medians over ``--runs`` runs (one warm-up).

    .venv/bin/python benchmarks/bench_mcp_quit.py [--runs 5]

The last line is ``mcp_quit_seconds: <median with four servers> s``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, bench_env, descendants, git_project, median, print_medians, quit_pane

from tests.e2e.tmux import TmuxPane, tmux_available

FAKE = ROOT / "tests" / "fakes" / "mcp_server.py"
SETTLE_S = 1.0


def _servers(pid_dir: Path) -> dict[str, object]:
    fake = {"command": sys.executable, "args": [str(FAKE), "--pid-dir", str(pid_dir)]}
    return {
        "fake": fake,
        "fake2": fake,
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
    }


def _quit(project: Path, home: Path, servers: int) -> float:
    command = [sys.executable, "-m", "agentsh"]
    with TmuxPane(command, cwd=project, env=bench_env(home), width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s and "│" in s, timeout=60)
        # The agent has loaded (quitting while it loads waits for the model worker instead).
        pane.wait_for(lambda s: "loading…" not in s and "%" in s, timeout=120)
        pid = pane.pid()
        if servers:
            deadline = time.monotonic() + 120
            while len(descendants(pid)) < 2 * servers and time.monotonic() < deadline:
                time.sleep(0.1)
            pane.wait_for(lambda s: "mcp " in s, timeout=120)
        time.sleep(SETTLE_S)  # what loads in the background after the first frame is done
        pane.type("/quit")
        return quit_pane(pane, "Enter")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {"none": [], "four": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = git_project(base / "project")
        for run in range(args.runs + 1):
            for name, count in (("none", 0), ("four", 4)):
                home = base / f"{name}-{run}"
                (home / "config").mkdir(parents=True)
                if count:
                    servers = _servers(base / f"pids-{run}")
                    (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
                seconds = _quit(project, home, count)
                if run:
                    times[name].append(seconds)
    print_medians(
        [("quit, no MCP server", times["none"]), ("quit, four MCP servers", times["four"])]
    )
    print(f"mcp_quit_seconds: {median(times['four']):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
