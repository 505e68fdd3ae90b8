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
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentsh.session.entries import Role, StopReason  # noqa: E402
from agentsh.session.session import Session  # noqa: E402
from tests.e2e.tmux import TmuxPane, tmux_available  # noqa: E402

BARE_APP = """
from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, TextArea


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield TextArea()
        yield Footer()


Bare().run()
"""


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


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            child = int(stat.parent.name)
            found += [child, *_children(child)]
    return found


def _tree(pid: int) -> tuple[float, float]:
    """(RSS of ``pid``, RSS of ``pid`` and all its descendants), in MB."""
    own = _rss_mb(pid)
    return own, own + sum(_rss_mb(c) for c in _children(pid))


def _session(folder: Path, cwd: Path, messages: int) -> Path:
    session = Session.create(folder, cwd)
    for i in range(messages // 2):
        session.append_message(Role.USER, f"Question {i}: how does `module_{i}` work?")
        session.append_message(
            Role.ASSISTANT,
            f"## Module {i}\n\nIt parses **input** and returns a `Result`.\n\n"
            f"- step one\n- step two\n\n```python\nresult = module_{i}.run(data)\n```",
            stop_reason=StopReason.STOP,
        )
    session.sync()
    session.close()
    assert session.path is not None
    return session.path


Tree = tuple[float, float]


def _agentsh(command: list[str], project: Path, home: Path, settle: float,
             typed: bool = False) -> tuple[Tree, Tree | None]:  # fmt: skip
    with TmuxPane(command, cwd=project, env=_env(home), width=120, height=40) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s and "│" in s, timeout=120)
        time.sleep(settle)
        idle = _tree(pane.pid())
        after = None
        if typed:
            pane.type("h")
            time.sleep(settle + 4)
            after = _tree(pane.pid())
        return idle, after


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3.0)
    args = parser.parse_args()
    if not tmux_available():
        print("tmux is not installed", file=sys.stderr)
        return 2
    python = sys.executable
    bare: list[float] = []
    new: list[tuple[float, float]] = []
    typed: list[tuple[float, float]] = []
    resumed: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        bare_py = tmp / "bare.py"
        bare_py.write_text(BARE_APP)
        project = tmp / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        big_home = tmp / "home-big"
        big = _session(big_home / "data" / "sessions" / "bench", project, 10_000)
        home = tmp / "home"
        home.mkdir()
        first, _ = _agentsh([python, "-m", "agentsh"], project, home, args.settle)
        for _run in range(args.runs):
            with TmuxPane([python, str(bare_py)], cwd=project, env=_env(home)) as pane:
                pane.wait_for(lambda s: "^p" in s, timeout=60)
                time.sleep(args.settle)
                bare.append(_rss_mb(pane.pid()))
            idle, after = _agentsh([python, "-m", "agentsh"], project, home, args.settle, True)
            new.append(idle)
            assert after is not None
            typed.append(after)
            resume, _ = _agentsh([python, "-m", "agentsh", "--session", str(big)], project,
                                 big_home, args.settle)  # fmt: skip
            resumed.append(resume)

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
