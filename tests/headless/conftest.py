"""Fixtures of the headless tests: ``agentsh -p`` run as a process against the scripted server
(shared with the agent's tests, which drive the same process), or in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.conftest import (  # noqa: F401 - shared fixtures
    AgentshRunner,
    Run,
    fast_retries,
    run_agentsh,
    run_agentsh_process,
)
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer


@pytest.fixture
def run_headless(
    scripted_server: ScriptedServer,
    project: Path,
    fast_retries: Path,  # noqa: F811 - the shared fixture
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> AgentshRunner:
    """``run_headless("-p", "hi", ...)``: the same command line as :func:`run_agentsh`, run
    through ``cli.main`` in this process with model calls in-process (a new ``agentsh -p``
    process costs seconds of CPU; this costs the turn). Stdin is no pipe here."""
    from agentsh.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("AGENTSH_MODEL_WORKER", "0")

    def run(*args: str) -> Run:
        capsys.readouterr()
        try:
            code = main(["-m", TEST_MODEL, "--api-base", scripted_server.base_url, *args])
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        out = capsys.readouterr()
        return Run(code, out.out, out.err)

    return run
