"""Helpers for running the real ``agentsh -p`` against the scripted server: in the test process
(:mod:`tests.fakes.in_process`), or as a process for the tests about the process itself."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.in_process import run_cli
from tests.fakes.server import ScriptedServer


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


AgentshRunner = Callable[..., Run]


@pytest.fixture
def fast_retries(agentsh_home: Path) -> Path:
    """A user config that makes retry backoff fast, as a user could set it, and gives MCP
    servers a minute to start (a loaded machine; [model] stays last: tests append to it)."""
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[mcp]\nstartup_timeout_s = 60.0\n"
        "[model]\nretry_base_delay_s = 0.01\nretry_max_delay_s = 0.05\n"
    )
    return config


@pytest.fixture
def run_agentsh(
    scripted_server: ScriptedServer,
    project: Path,
    fast_retries: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AgentshRunner:
    """``run_agentsh("-p", "hi", ...)`` runs agentsh's command line in the project folder, in
    this process (the model calls in the model worker, as the command makes them)."""

    def run(*args: str, key: str = FAKE_KEY, input: str = "", cwd: Path | None = None) -> Run:
        """``input`` is piped to stdin (by default stdin is an empty pipe, not a terminal);
        ``cwd`` is the folder it runs in (the project by default)."""
        argv = ["-m", TEST_MODEL, "--api-base", scripted_server.base_url, *args]
        with monkeypatch.context() as scope:
            scope.setenv("OPENAI_API_KEY", key)
            scope.chdir(cwd or project)
            done = run_cli(argv, input=input)
        return Run(done.code, done.stdout, done.stderr)

    return run


@pytest.fixture
def run_agentsh_process(
    scripted_server: ScriptedServer, project: Path, fast_retries: Path
) -> AgentshRunner:
    """``run_agentsh_process("-p", "hi", ...)``: the installed agentsh as a process of its own
    (``python -m agentsh``), for the tests about the process (its start, its model worker)."""

    def run(*args: str, timeout: float = 100, key: str = FAKE_KEY, input: str = "") -> Run:
        """``input`` is piped to stdin (by default stdin is an empty pipe, not a terminal)."""
        env = dict(os.environ)
        env["OPENAI_API_KEY"] = key
        command = [
            sys.executable,
            "-m",
            "agentsh",
            "-m",
            TEST_MODEL,
            "--api-base",
            scripted_server.base_url,
            *args,
        ]
        done = subprocess.run(
            command,
            cwd=project,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    return run


def session_files(home: Path) -> list[Path]:
    return sorted((home / "data" / "sessions").rglob("*.jsonl"))
