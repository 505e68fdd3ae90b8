"""Helpers for running the real ``agentsh -p`` as a subprocess against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


AgentshRunner = Callable[..., Run]


@pytest.fixture
def fast_retries(agentsh_home: Path) -> Path:
    """A user config that makes retry backoff fast, as a user could set it."""
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[model]\nretry_base_delay_s = 0.01\nretry_max_delay_s = 0.05\n")
    return config


@pytest.fixture
def run_agentsh(
    scripted_server: ScriptedServer, project: Path, fast_retries: Path
) -> AgentshRunner:
    """``run_agentsh("-p", "hi", ...)`` runs the installed agentsh in the project folder."""

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
