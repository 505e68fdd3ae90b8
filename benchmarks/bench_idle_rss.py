"""Resident memory of an idle agentsh, beside a bare Textual app measured the same way.

Each program runs in a fresh 120x40 tmux pane (a private tmux server) with a model configured
(``OPENAI_API_KEY`` set, so agentsh picks ``openai/gpt-4.1``). Once it is ready (agentsh: the
status bar's "loading…" has gone) and has sat still for ``--settle`` seconds, the resident set
(VmRSS) of the pane's process and of every process under it is read from /proc:

- bare: a Textual app with a header, a text area and a footer;
- new session: ``agentsh`` in an empty git project, nothing typed, in a home it has started in
  before (as a user's every start but the first: litellm's facts about the model are in the
  cache folder); the first start in a new home (the model worker answers those facts, and stays)
  is reported apart;
- typed: the same agentsh after one character was typed into the editor and ``--settle`` more
  seconds (whatever agentsh starts when the user begins to write is running by then);
- resume: ``agentsh --session FILE`` on a 10,000-message session (5,000 exchanges of short
  markdown answers), nothing typed.

agentsh's figures are the UI process and the whole tree (UI process plus any child). Medians of
``--runs`` runs. The goal (issue 16): a new session's idle tree at most 150 MB.

    .venv/bin/python benchmarks/bench_idle_rss.py [--runs 3] [--settle 3]

The last line is ``idle_rss_new_session: <tree MB> MB``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchlib import (
    BARE_APP,
    agentsh_command,
    bench_env,
    git_project,
    long_session,
    rss_mb,
    tree_rss_mb,
    wait_agentsh_ready,
)

from tests.e2e.tmux import TmuxPane, tmux_available
from tests.fakes.warm_workers import end_warm_workers

Tree = tuple[float, float]


def _agentsh(command: list[str], project: Path, home: Path, settle: float,
             typed: bool = False) -> tuple[Tree, Tree | None]:  # fmt: skip
    with TmuxPane(command, cwd=project, env=bench_env(home), width=120, height=40) as pane:
        wait_agentsh_ready(pane)
        time.sleep(settle)
        idle = tree_rss_mb(pane.pid())
        after = None
        if typed:
            pane.type("h")
            time.sleep(settle + 4)
            after = tree_rss_mb(pane.pid())
        return idle, after


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    bare: list[float] = []
    new: list[tuple[float, float]] = []
    typed: list[tuple[float, float]] = []
    resumed: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bare_py = tmp / "bare.py"
        bare_py.write_text(BARE_APP)
        project = git_project(tmp / "project")
        big_home = tmp / "home-big"
        big = long_session(big_home / "data" / "sessions" / "bench", project, 10_000)
        home = tmp / "home"
        home.mkdir()
        first, _ = _agentsh(agentsh_command(), project, home, args.settle)
        for _run in range(args.runs):
            with TmuxPane([sys.executable, str(bare_py)], cwd=project, env=bench_env(home)) as pane:
                pane.wait_for(lambda s: "^p" in s, timeout=60)
                time.sleep(args.settle)
                bare.append(rss_mb(pane.pid()))
            idle, after = _agentsh(agentsh_command(), project, home, args.settle, True)
            new.append(idle)
            assert after is not None
            typed.append(after)
            resume, _ = _agentsh(agentsh_command("--session", str(big)), project, big_home,
                                 args.settle)  # fmt: skip
            resumed.append(resume)
        end_warm_workers(tmp)  # a later run forks from an earlier one's, as a user's; none outlives

    def med(rows: list[tuple[float, float]], i: int) -> float:
        return statistics.median(r[i] for r in rows)

    print(f"runs: {args.runs}; RSS read {args.settle:.0f} s after ready; MB, medians")
    print(f"bare Textual app                      {statistics.median(bare):6.0f}")
    print(f"agentsh first start ever    UI {first[0]:6.0f}   UI + children {first[1]:6.0f}")
    print(f"agentsh new session, idle   UI {med(new, 0):6.0f}   UI + children {med(new, 1):6.0f}")
    print(f"agentsh new session, typed  UI {med(typed, 0):6.0f}   UI + children "
          f"{med(typed, 1):6.0f}")  # fmt: skip
    print(f"agentsh 10,000-message resume  UI {med(resumed, 0):6.0f}   UI + children "
          f"{med(resumed, 1):6.0f}")  # fmt: skip
    print(f"idle_rss_resume_10k: {med(resumed, 1):.0f} MB")
    print(f"idle_rss_new_session: {med(new, 1):.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
