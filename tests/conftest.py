"""Shared fixtures: every test gets its own AGENTSH_HOME and project folder, and no real keys."""

from __future__ import annotations

import gc
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.fakes.fixtures"]

# Property tests check behaviour, not this machine's speed: on a shared 2-core box with four
# workers, drawing inputs and running an example can be slow, which is no failure.
settings.register_profile("agentsh", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentsh")

_PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "AGENTSH_MODEL",
    "AGENTSH_API_BASE",
)


@pytest.fixture(autouse=True)
def agentsh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private AGENTSH_HOME; no provider key from the developer's shell leaks in."""
    home = tmp_path / "agentsh-home"
    home.mkdir()
    monkeypatch.setenv("AGENTSH_HOME", str(home))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Ollama auto-detection must not find a developer's local server during tests.
    monkeypatch.setenv("AGENTSH_NO_OLLAMA_PROBE", "1")
    # Nor may `agentsh memory search` leave a warm search process behind (the tests of that
    # process turn this off themselves).
    monkeypatch.setenv("AGENTSH_NO_WARM_SEARCH", "1")
    for key in _PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    # A front end run in-process (cli.main(["-p", ...])) switches this process to the model
    # worker; the next test starts in-process again (the `model_worker` fixture opts in).
    from agentsh.llm import remote

    monkeypatch.setattr(remote, "_in_use", False)
    return home


@pytest.fixture(autouse=True)
def keys_answer_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trust and restore questions take keys as soon as they show (a Pilot press comes
    within their grace for keys typed ahead); tests of that grace set it back."""
    from agentsh.tui import key_grace

    monkeypatch.setattr(key_grace, "GRACE_S", 0.0)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh git project folder, made the current directory."""
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    monkeypatch.chdir(root)
    yield root


@pytest.fixture
def collector_off() -> Iterator[None]:
    """CPU bounds time the code under test, not a full garbage collection of what earlier tests
    in the same worker process left (seen: a 20 ms scan charged 600 ms in CI)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# How long a warm model worker outlives its last worker in a test run: the tests of a module
# follow each other within it, and the session ends what is left.
WARM_WORKER_S = "60"


@pytest.fixture(scope="session", autouse=True)
def shared_warm_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The agentsh processes the tests start share warm model workers (:mod:`agentsh.llm.
    warm_worker`), as a user's do: one litellm import per environment for the whole run, not one
    per process (41 of them, 5 s of CPU each). Their sockets are in a runtime folder of the run
    (shared by pytest-xdist's workers), not the user's. Every warm worker a test made is ended
    with the session, not left to hold ~300 MB for its idle time. A test of what a worker does
    while it imports litellm sets ``AGENTSH_WARM_WORKER_S=0`` for the agentsh it starts."""
    base = tmp_path_factory.getbasetemp()
    run = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    with pytest.MonkeyPatch.context() as session_env:
        session_env.setenv("XDG_RUNTIME_DIR", str(run))
        session_env.setenv("AGENTSH_WARM_WORKER_S", WARM_WORKER_S)
        yield
    from tests.fakes.warm_workers import end_warm_workers

    end_warm_workers(base)
