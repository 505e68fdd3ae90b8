"""End to end: the real TUI keeps the code ``@dataclass`` writes beside its bytecode
(agentsh.dataclass_code), also when the terminal closes (SIGHUP runs no exit handler), and the
next start finds all of its start-up classes there."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from agentsh.dataclass_code import entries, read_table
from tests.e2e.tmux import TmuxPane, tmux_available
from tests.fakes.warm_workers import warm_worker_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]


def _mtime(path: Path) -> int | None:
    return path.stat().st_mtime_ns if path.exists() else None


def _start_and_hang_up(project: Path, env: dict[str, str], table: Path) -> None:
    """Start the TUI, wait until it has loaded its agent and written what it compiled (twice
    on a first start: once the agent is up, then after the Markdown modules load), and close
    the terminal."""
    first = _mtime(table)
    with TmuxPane([sys.executable, "-m", "agentsh"], cwd=project, env=env) as pane:
        pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
        pane.wait_for(lambda s: "loading…" not in s and "│" in s, timeout=90)
        # a second start should write nothing: a few seconds show a write that comes
        deadline = time.monotonic() + (60 if first is None else 5)
        seen = first
        writes = 0
        while writes < (2 if first is None else 1) and time.monotonic() < deadline:
            now = _mtime(table)
            if now != seen:
                seen, writes = now, writes + 1
            time.sleep(0.1)
    # leaving the block ends the tmux server: SIGHUP, which runs no exit handler


def test_the_tui_keeps_its_classes_code_and_finds_it_next_time(
    tmp_path: Path, project: Path
) -> None:
    prefix = tmp_path / "pycache"
    env = {
        "AGENTSH_HOME": str(tmp_path / "home"),
        "OPENAI_API_KEY": "sk-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AGENTSH_NO_OLLAMA_PROBE": "1",
        "PYTHONPATH": str(ROOT),
        "PYTHONPYCACHEPREFIX": str(prefix),
        "PYTHONDONTWRITEBYTECODE": "",
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
        **warm_worker_env(),
    }
    table = prefix / ROOT.relative_to(ROOT.anchor) / "agentsh"
    table = table / f"dataclass-methods.{sys.implementation.cache_tag}.marshal"
    _start_and_hang_up(project, env, table)
    assert table.exists()
    # The first frame's classes (~530 sources) and the agent's (~800 more).
    assert len(entries(*read_table(table))) > 1000
    written = table.stat().st_mtime_ns
    _start_and_hang_up(project, env, table)
    assert table.stat().st_mtime_ns == written  # nothing new was compiled
