"""Start-up time of the TUI in a real terminal, beside a bare Textual app measured the same way.

Each program runs in a fresh 120x40 tmux pane (a private tmux server) polled every 10 ms with
capture-pane; agentsh keeps one AGENTSH_HOME across its runs, as a user does (the first run,
a first start ever, is reported apart). "First frame" is the first poll that shows anything;
"ready to type" is the first poll that shows the editor and the status bar (agentsh) or the
footer (the bare app: Header, TextArea, Footer), with the CPU the program had used by then
(a figure the machine's load changes far less than the times). For agentsh it also reports
"agent ready" (ready to chat), when the status bar's "loading…" goes (the session and the
agent load in a thread after the first frame; litellm loads in the model worker process).
One warm-up run each, then 10 runs each, interleaved (with ``--baseline``, agentsh and the
baseline take turns right after the bare app); medians in seconds. The goals: agentsh ready to
type within 1.3x of the bare app, and ready to chat within 3x (issue 16).

    .venv/bin/python benchmarks/bench_tui_startup.py [--runs 10] [--baseline ROOT]

``--baseline ROOT`` also runs another checkout's agentsh (e.g. /work/main) the same way,
interleaved, for a before/after in the same run.

Every program reads its bytecode from one fresh cache of the run (``PYTHONPYCACHEPREFIX``), filled
by the warm-up run, whatever ``PYTHONDONTWRITEBYTECODE`` the shell has: an installed agentsh has
its ``.pyc`` files, and a checkout without them (or with stale ones) compiled its modules on
every start, which counted ~0.3-0.7 s of compiling as start-up, and differently per checkout.

The last line is ``tui_ready_to_chat_ratio: <agentsh agent ready / bare ready> x``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchlib import BARE_APP, agentsh_command, bench_env, git_project, tree_cpu_s

from tests.e2e.tmux import TmuxPane, tmux_available

Measured = tuple[float, float, float | None, float]  # first frame, ready, agent ready, CPU


def _measure(command: list[str], cwd: Path, env: dict[str, str], ready_marks: tuple[str, ...],
             agent_mark: str | None) -> Measured:  # fmt: skip
    """The times, and the CPU the program (with its children) had used when it was seen ready
    to type: on a loaded machine the times are mostly waiting for a core, the CPU is not."""
    with TmuxPane(command, cwd=cwd, env=env, width=120, height=40) as pane:
        first = pane.wait_for(lambda s: bool(s.strip()), timeout=30)
        ready = pane.wait_for(lambda s: all(m in s for m in ready_marks), timeout=30)
        cpu = tree_cpu_s(pane.pid())
        agent = None
        if agent_mark is not None:
            agent = pane.wait_for(lambda s: agent_mark not in s and "│" in s, timeout=60)
        return first, ready, agent, cpu


def compiled(pycache: Path) -> dict[str, str]:
    """Environment for a program that reads and writes its bytecode under ``pycache``."""
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(pycache)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--first-starts",
        type=int,
        default=0,
        metavar="N",
        help="instead: N first starts ever (a new home each), beside the bare app",
    )
    parser.add_argument("--baseline", type=Path, help="another checkout, run the same way")
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    python = sys.executable
    if args.first_starts:
        return _first_starts(args.first_starts)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        bare = tmp_path / "bare.py"
        bare.write_text(BARE_APP)
        project = git_project(tmp_path / "project")
        pyc = compiled(tmp_path / "pycache")
        results: dict[str, list[Measured]] = {"bare": [], "agentsh": []}
        if args.baseline is not None:
            results["baseline"] = []
            baseline_home = tmp_path / "home-baseline"
            baseline_home.mkdir()
        # agentsh keeps one home across runs, as a user does: the first run (not counted) is a
        # first start ever, and fills the caches later starts read (the model's facts).
        agentsh_home = tmp_path / "home-agentsh"
        agentsh_home.mkdir()
        first_start: Measured | None = None
        marks = ("Message agentsh", "│")
        for run in range(args.runs + 1):
            home = tmp_path / f"home-{run}"
            home.mkdir()
            b = _measure([python, str(bare)], project, {**bench_env(home), **pyc}, ("^p",), None)
            programs = [("agentsh", {**bench_env(agentsh_home), **pyc})]
            if args.baseline is not None:
                env = {**bench_env(baseline_home, PYTHONPATH=str(args.baseline.resolve())), **pyc}
                # Each goes right after the bare app every other run: neither always starts
                # while the one before it is still ending.
                programs.insert(run % 2, ("baseline", env))
            measured = {
                name: _measure(agentsh_command(), project, env, marks, "loading…")
                for name, env in programs
            }
            if run:  # the first run warms the file and bytecode caches
                results["bare"].append(b)
                for name, value in measured.items():
                    results[name].append(value)
            else:
                first_start = measured["agentsh"]

    def med(name: str, index: int) -> float:
        return statistics.median(v for r in results[name] if (v := r[index]) is not None)

    bare_first, bare_ready = med("bare", 0), med("bare", 1)
    a_first, a_ready, a_agent = med("agentsh", 0), med("agentsh", 1), med("agentsh", 2)
    print(f"runs: {args.runs} each, interleaved, 120x40 tmux pane polled every 10 ms")
    print(f"bare Textual app   first frame {bare_first:.3f} s   ready to type {bare_ready:.3f} s")
    print(f"agentsh            first frame {a_first:.3f} s   ready to type {a_ready:.3f} s"
          f"   agent ready {a_agent:.3f} s")  # fmt: skip
    if args.baseline is not None:
        r_first, r_ready, r_agent = med("baseline", 0), med("baseline", 1), med("baseline", 2)
        print(f"baseline           first frame {r_first:.3f} s   ready to type {r_ready:.3f} s"
              f"   agent ready {r_agent:.3f} s   ({args.baseline}; ready ratio "
              f"{r_ready / bare_ready:.2f} x)")  # fmt: skip
    if first_start is not None and first_start[2] is not None:
        print(f"agentsh first start in a new home (one run, not in the medians): agent ready "
              f"{first_start[2]:.3f} s")  # fmt: skip
    bare_cpu, a_cpu = med("bare", 3), med("agentsh", 3)
    cpu_line = f"CPU by ready to type: bare {bare_cpu:.2f} s, agentsh {a_cpu:.2f} s"
    if args.baseline is not None:
        cpu_line += f", baseline {med('baseline', 3):.2f} s"
    print(cpu_line)
    print(f"tui_startup_first_frame: {a_first:.3f} s")
    print(f"tui_startup_ready: {a_ready:.3f} s")
    print(f"tui_startup_ready_ratio: {a_ready / bare_ready:.2f} x")
    print(f"tui_startup_ready_cpu_ratio: {a_cpu / bare_cpu:.2f} x")
    print(f"tui_ready_to_chat_ratio: {a_agent / bare_ready:.2f} x")
    return 0


def _first_starts(runs: int) -> int:
    """Ready to chat on a first start ever (no remembered model facts), interleaved with the
    bare app's ready; medians."""
    bare_ready: list[float] = []
    agent_ready: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        bare = tmp_path / "bare.py"
        bare.write_text(BARE_APP)
        project = git_project(tmp_path / "project")
        pyc = compiled(tmp_path / "pycache")
        for run in range(runs + 1):  # the first run, not counted, fills the bytecode cache
            home, agentsh_home = tmp_path / f"home-{run}", tmp_path / f"home-agentsh-{run}"
            home.mkdir()
            agentsh_home.mkdir()
            b = _measure([sys.executable, str(bare)], project, {**bench_env(home), **pyc}, ("^p",),
                         None)  # fmt: skip
            a = _measure(agentsh_command(), project, {**bench_env(agentsh_home), **pyc},
                         ("Message agentsh", "│"), "loading…")  # fmt: skip
            if not run:
                continue
            bare_ready.append(b[1])
            if a[2] is not None:
                agent_ready.append(a[2])
    bare_s, agent_s = statistics.median(bare_ready), statistics.median(agent_ready)
    print(f"first starts: {runs}, each in a new home, interleaved with the bare app")
    print(f"bare Textual app   ready to type {bare_s:.3f} s")
    print(f"agentsh            ready to chat {agent_s:.3f} s ({agent_s / bare_s:.1f}x)")
    print(f"tui_first_start_ready_to_chat: {agent_s:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
