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
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.tmux import TmuxPane, tmux_available  # noqa: E402

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


def _env(home: Path) -> dict[str, str]:
    return {
        "AGENTSH_HOME": str(home),
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
        "AGENTSH_NO_OLLAMA_PROBE": "1",
        "OPENAI_API_KEY": "sk-bench",
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (servers, their launch shells and watchdogs)."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    children: dict[int, list[int]] = {}
    for line in out.stdout.splitlines():
        child, parent = (int(x) for x in line.split())
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _quit(project: Path, home: Path, servers: int) -> float:
    command = [sys.executable, "-m", "agentsh"]
    with TmuxPane(command, cwd=project, env=_env(home), width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s and "│" in s, timeout=60)
        # The agent has loaded (quitting while it loads waits for the model worker instead).
        pane.wait_for(lambda s: "loading…" not in s and "%" in s, timeout=120)
        pid = pane.pid()
        if servers:
            deadline = time.monotonic() + 120
            while len(_descendants(pid)) < 2 * servers and time.monotonic() < deadline:
                time.sleep(0.1)
            pane.wait_for(lambda s: "mcp " in s, timeout=120)
        time.sleep(SETTLE_S)  # what loads in the background after the first frame is done
        below = _descendants(pid)
        pane.type("/quit")
        began = time.perf_counter()
        pane.send("Enter")
        while _alive(pid):
            time.sleep(0.005)
        elapsed = time.perf_counter() - began
        time.sleep(0.5)
        left = [p for p in below if _alive(p)]
        if left:
            raise RuntimeError(f"processes left behind: {left}")
    return elapsed


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
        project = base / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
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
    none, four = statistics.median(times["none"]), statistics.median(times["four"])
    print(f"quit, no MCP server:    median {none:.3f} s  {[round(t, 3) for t in times['none']]}")
    print(f"quit, four MCP servers: median {four:.3f} s  {[round(t, 3) for t in times['four']]}")
    print(f"mcp_quit_seconds: {four:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
