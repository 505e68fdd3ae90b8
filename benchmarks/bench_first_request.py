"""From the user's Enter to the request arriving at the model server: the "waiting for the
model" that is agentsh's own, for the first and second turns of a TUI session and of ``-p``.

The endpoint is the scripted server as a process (``python -m tests.fakes.server --log``), which
logs the wall-clock time each request arrives. For each tree (this checkout, and ``--baseline``,
e.g. /work/main, run alternately so machine load hits them alike, each in a fresh home):

- ``tui 1`` / ``tui 2``: agentsh in a 120x40 tmux pane; once its agent is ready ("loading…"
  gone), "h" is typed (the first key starts the model worker), and once the process tree has
  gone quiet (the worker's litellm import over, as for a user who writes for longer than
  that: this measures the model path, not the start) "ello" and Enter (``--pause`` seconds
  after it shows); the figure is Enter to the request's arrival. Then, the answer shown, a
  second message the same way;
- ``tui-early 1`` / ``2`` (``--modes early``): the first message typed and sent as soon as
  the editor shows (the agent still loading, the worker not started), as a user who starts
  at once: this one includes the start;
- ``-p 1`` / ``-p 2``: ``agentsh -p hello`` then ``agentsh -c -p again`` (the same session,
  continued), each from its process start to its request's arrival (start-up included: that
  is what a ``-p`` user waits). The second finds the warm model worker the first left
  (:mod:`agentsh.llm.warm_worker`), where the tree has one;
- ``after-p 1`` / ``2`` (``--modes after-p``): ``agentsh -p hello``, then a TUI measured as
  ``tui-early``: a user's next agentsh, started while the warm worker the first left is up.

After each mode the warm workers it left are ended: each mode starts without one.

    .venv/bin/python benchmarks/bench_first_request.py --baseline /work/main [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import ROOT, bench_env, git_project, median, tree_cpu_s

from tests.e2e.tmux import ScriptedServerProcess, TmuxPane
from tests.fakes.warm_workers import end_warm_workers

ANSWER = "Here is the answer you asked for."
# A model litellm's price list knows (the scripted server answers any): its facts come from
# the list at once, as for most users; an unknown one makes a first start ever wait for the
# worker's litellm import before the agent is ready.
MODEL = "openai/gpt-4.1"


def _arrivals(log: Path) -> list[float]:
    """The logged requests' arrival times (a line still being written is not one yet)."""
    if not log.exists():
        return []
    times = []
    for line in log.read_text().splitlines():
        try:
            times.append(float(json.loads(line)["time"]))
        except ValueError:
            break
    return times


def _wait_request(log: Path, count: int, timeout: float = 120) -> float:
    """The wall-clock arrival of request number ``count`` (1-based)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        times = _arrivals(log)
        if len(times) >= count:
            return times[count - 1]
        time.sleep(0.005)
    raise TimeoutError(f"request {count} never arrived")


def _wait_quiet(pid: int, quiet_s: float = 1.0, timeout: float = 90) -> None:
    """Until the process tree under ``pid`` used < 5 % of a core for ``quiet_s``."""
    deadline = time.monotonic() + timeout
    last = tree_cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = tree_cpu_s(pid)
        if now - last < 0.05 * quiet_s:
            return
        last = now
    raise TimeoutError("the program never went quiet")


def _tui(tree: Path, home: Path, base_url: str, log: Path, pause: float) -> tuple[float, float]:
    project = git_project(home / "project")
    env = bench_env(home, PYTHONPATH=str(tree))
    command = [sys.executable, "-m", "agentsh", "-m", MODEL, "--api-base", base_url]
    gaps = []
    with TmuxPane(command, cwd=project, env=env, width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s and "│" in s, timeout=120)
        done = len(_arrivals(log))
        for turn, words in enumerate(("hello", "and again"), start=1):
            # The first key starts the model worker; a user who takes longer to write than
            # its litellm import (5-15 s here) finds it ready: wait for the tree to go quiet.
            pane.type(words[0])
            pane.wait_for(_shows(words[0]), timeout=10)
            _wait_quiet(pane.pid())
            pane.type(words[1:])
            pane.wait_for(_shows(words), timeout=10)
            time.sleep(pause)  # a user who reads over the message before sending it
            enter = time.time()
            pane.send("Enter")
            gaps.append(_wait_request(log, done + turn) - enter)
            pane.wait_for(_answers(turn), timeout=60)
    return gaps[0], gaps[1]


def _shows(text: str) -> Callable[[str], bool]:
    """A screen test: ``text`` is on it."""
    return lambda screen: text in screen


def _answers(count: int) -> Callable[[str], bool]:
    """A screen test: the scripted answer shows ``count`` times."""
    return lambda screen: screen.count(ANSWER) >= count


def _tui_early(
    tree: Path, home: Path, base_url: str, log: Path, pause: float
) -> tuple[float, float]:
    """The first message typed and sent as soon as the editor shows (the agent still loading:
    the message is queued); then, all quiet, a second one."""
    project = git_project(home / "project")
    env = bench_env(home, PYTHONPATH=str(tree))
    command = [sys.executable, "-m", "agentsh", "-m", MODEL, "--api-base", base_url]
    gaps = []
    with TmuxPane(command, cwd=project, env=env, width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
        done = len(_arrivals(log))
        for turn, words in enumerate(("hello", "and again"), start=1):
            if turn > 1:
                _wait_quiet(pane.pid())
            pane.type(words)
            pane.wait_for(_shows(words), timeout=10)
            time.sleep(pause)
            enter = time.time()
            pane.send("Enter")
            gaps.append(_wait_request(log, done + turn) - enter)
            pane.wait_for(_answers(turn), timeout=90)
    return gaps[0], gaps[1]


def _print_mode(
    tree: Path, home: Path, base_url: str, log: Path, pause: float
) -> tuple[float, float]:
    project = git_project(home / "project")
    env = bench_env(home, PYTHONPATH=str(tree))
    gaps = []
    for turn, args in enumerate((["-p", "hello"], ["-c", "-p", "again"]), start=1):
        done = len(_arrivals(log))
        command = [sys.executable, "-m", "agentsh", "-m", MODEL,
                   "--api-base", base_url, *args]  # fmt: skip
        start = time.time()
        run = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                             timeout=180)  # fmt: skip
        if run.returncode != 0 or ANSWER not in run.stdout:
            raise SystemExit(f"-p turn {turn} failed: {run.stderr.strip()[-400:]}")
        gaps.append(_wait_request(log, done + 1) - start)
    return gaps[0], gaps[1]


def _tui_after_print(
    tree: Path, home: Path, base_url: str, log: Path, pause: float
) -> tuple[float, float]:
    """``agentsh -p`` once (it leaves the warm worker, where the tree has one), then a TUI
    measured as :func:`_tui_early`. The ``-p`` runs with the environment the TUI's tmux pane
    gives it (this process's, and the pane's exports), as from the same shell."""
    project = git_project(home / "project")
    env = {**os.environ, **bench_env(home, PYTHONPATH=str(tree))}
    command = [sys.executable, "-m", "agentsh", "-m", MODEL, "--api-base", base_url, "-p", "hi"]
    run = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                         timeout=180)  # fmt: skip
    if run.returncode != 0 or ANSWER not in run.stdout:
        raise SystemExit(f"-p failed: {run.stderr.strip()[-400:]}")
    return _tui_early(tree, home, base_url, log, pause)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a tree to compare with")
    parser.add_argument("--runs", type=int, default=3, help="runs per tree and mode")
    parser.add_argument("--modes", default="tui,p",
                        help="tui, early, p, after-p (comma-separated)")  # fmt: skip
    parser.add_argument("--pause", type=float, default=0.0,
                        help="seconds between the message on screen and Enter (tui)")  # fmt: skip
    args = parser.parse_args()
    trees = {"this": ROOT, "baseline": args.baseline.resolve()}
    modes = args.modes.split(",")
    rows: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        script = tmp / "script.json"
        script.write_text(json.dumps([ANSWER] * (args.runs * len(trees) * 6 + 4)))
        log = tmp / "requests.jsonl"
        with ScriptedServerProcess(script, root=ROOT, log=log) as server:
            for run in range(args.runs):
                for name, tree in trees.items():
                    for mode in modes:
                        home = tmp / f"{name}-{mode}-{run}"
                        measure = {"tui": _tui, "early": _tui_early, "p": _print_mode,
                                   "after-p": _tui_after_print}[mode]  # fmt: skip
                        try:
                            first, second = measure(tree, home, server.base_url, log, args.pause)
                        finally:
                            end_warm_workers(home)
                        label = {"tui": "tui", "early": "tui-early", "p": "-p ",
                                 "after-p": "after-p"}[mode]  # fmt: skip
                        rows.setdefault((f"{label} 1", name), []).append(first)
                        rows.setdefault((f"{label} 2", name), []).append(second)
                        print(f"run {run + 1} {name:8s} {mode:3s} {first:6.3f} {second:6.3f} s",
                              flush=True)  # fmt: skip
    print(f"load {os.getloadavg()[0]:.1f}; Enter (tui) or process start (-p) to the request's "
          "arrival, medians")  # fmt: skip
    for (what, name), values in sorted(rows.items()):
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"{what} {name:8s} median {median(values):6.2f} s  [{runs}]")


if __name__ == "__main__":
    main()
