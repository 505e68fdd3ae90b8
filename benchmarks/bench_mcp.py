"""MCP start-up: the TUI's first frame with three servers configured, and when tools are ready.

1. First frame and ready-to-type of the real TUI in a 120x40 tmux pane (as
   bench_tui_startup.py measures them), with no MCP server configured and with three
   (the fake test server, ``mcp-server-time`` and ``mcp-server-git``, all stdio), interleaved
   in the same run. The servers start after the first frame, so the ratio should be ~1.
2. Time until the tools of the three servers are ready, from a fresh process (the SDK's import
   included), beside the same figure for the slowest of them started alone: the servers start
   in parallel, so together should cost about the slowest one.

Medians over ``--runs`` runs (one warm-up each).

    .venv/bin/python benchmarks/bench_mcp.py [--runs 7]

The last line is ``mcp_first_frame_ratio: <with three servers / without> x``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from benchlib import ROOT, agentsh_command, bench_env, git_project

from tests.e2e.tmux import TmuxPane, tmux_available

FAKE = ROOT / "tests" / "fakes" / "mcp_server.py"
SERVERS = {
    "fake": {"command": sys.executable, "args": [str(FAKE)]},
    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
}

READY_SCRIPT = """
import sys, time
began = time.monotonic()
from pathlib import Path
from agentsh.config import load_environment
from agentsh.mcp.mcp_manager import manager_for
env = load_environment(Path(sys.argv[1]))
manager, _notices = manager_for(env, Path(sys.argv[1]), trusted=False)
manager.start()
manager.wait_until_started_sync(180)
elapsed = time.monotonic() - began
ready = [s.name for s in manager.statuses() if s.state.value == "ready"]
for s in manager.statuses():
    if s.state.value != "ready":
        print(f"{s.name}: {s.state.value}: {s.reason}", file=sys.stderr)
manager.close()
print(f"{elapsed:.4f} {','.join(ready)}")
"""


def _home(base: Path, name: str, servers: Mapping[str, object] | None) -> Path:
    home = base / name
    (home / "config").mkdir(parents=True)
    if servers:
        (home / "config" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
        # Measure how long they take, however long: a loaded machine must not turn a slow
        # start into a failure (the default gives up after 10 s).
        (home / "config" / "config.toml").write_text("[mcp]\nstartup_timeout_s = 120\n")
    return home


def _frame(project: Path, home: Path) -> tuple[float, float]:
    with TmuxPane(
        agentsh_command(), cwd=project, env=bench_env(home), width=120, height=40
    ) as pane:
        first = pane.wait_for(lambda s: bool(s.strip()), timeout=30)
        ready = pane.wait_for(lambda s: "Message agentsh" in s and "│" in s, timeout=30)
    return first, ready


def _tools_ready(project: Path, home: Path) -> tuple[float, str]:
    done = subprocess.run(
        [sys.executable, "-c", READY_SCRIPT, str(project)],
        env=bench_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"the measuring process failed: {done.stderr.strip()[-500:]}")
    if done.stderr.strip():
        print(done.stderr.strip(), file=sys.stderr)
    seconds, _, names = done.stdout.strip().rpartition("\n")[2].partition(" ")
    return float(seconds), names


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    frames: dict[str, list[tuple[float, float]]] = {"none": [], "three": []}
    ready: dict[str, list[float]] = {"three": [], **{name: [] for name in SERVERS}}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = git_project(base / "project")
        for run in range(args.runs + 1):
            none = _frame(project, _home(base, f"none-{run}", None))
            three = _frame(project, _home(base, f"three-{run}", SERVERS))
            together, names = _tools_ready(project, _home(base, f"ready-{run}", SERVERS))
            if names.split(",") != sorted(SERVERS):
                print(f"not every server started: {names}", file=sys.stderr)
                return 1
            alone = {
                name: _tools_ready(project, _home(base, f"{name}-{run}", {name: spec}))[0]
                for name, spec in SERVERS.items()
            }
            if run:  # the first run warms the file cache
                frames["none"].append(none)
                frames["three"].append(three)
                ready["three"].append(together)
                for name, seconds in alone.items():
                    ready[name].append(seconds)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    none_first = med([f for f, _ in frames["none"]])
    three_first = med([f for f, _ in frames["three"]])
    none_ready = med([r for _, r in frames["none"]])
    three_ready = med([r for _, r in frames["three"]])
    alone = {name: med(ready[name]) for name in SERVERS}
    slowest = max(alone, key=lambda name: alone[name])
    print(f"runs: {args.runs} each, interleaved; medians in seconds")
    print(f"TUI, no MCP server      first frame {none_first:.3f}   ready to type {none_ready:.3f}")
    print(
        f"TUI, three MCP servers  first frame {three_first:.3f}   ready to type {three_ready:.3f}"
    )
    for name, seconds in alone.items():
        print(f"tools ready, {name} alone: {seconds:.3f}")
    print(f"tools ready, all three together: {med(ready['three']):.3f} (slowest alone: {slowest})")
    print(f"mcp_tools_ready: {med(ready['three']):.3f} s")
    print(f"mcp_tools_ready_vs_slowest_alone: {med(ready['three']) / alone[slowest]:.2f} x")
    print(f"mcp_first_frame_ratio: {three_first / none_first:.2f} x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
