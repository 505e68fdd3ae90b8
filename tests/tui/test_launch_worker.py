"""The TUI's model calls go through the model worker although the launcher no longer imports
it before the first frame: the load thread switches it on just before the agent is built, and
the quit hook stops a worker only if that thread got as far as loading it (issue 16)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import Environment, load_environment
from agentsh.llm import remote
from agentsh.session.session import Session
from agentsh.tui import launch, lifecycle
from agentsh.tui.options import LaunchOptions


def test_the_agent_is_built_with_the_model_worker_switched_on(
    project: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTSH_MODEL_WORKER", raising=False)
    assert not remote.in_use()  # the conftest starts every test in-process
    built: list[bool] = []
    agent = object()

    def build(env: Environment, session: Session, options: LaunchOptions) -> Any:
        built.append(remote.in_use())  # what build_agent reads to choose RemoteLLMClient
        return agent

    monkeypatch.setattr(lifecycle, "build_real_agent", build)
    env = load_environment(project)
    made = launch.worker_agent(env, Session.create(None, project), LaunchOptions())
    assert made is agent and built == [True]


def test_the_launcher_hands_the_app_the_worker_factory_and_quit_hook(
    project: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: dict[str, Any] = {}

    class FakeApp:
        return_code = 0

        def __init__(self, _env: Environment, _options: object, **kwargs: Any) -> None:
            given.update(kwargs)

        def run(self) -> None:
            return None

    monkeypatch.setattr("agentsh.tui.app.AgentshApp", FakeApp)
    assert launch.main(argparse.Namespace()) == 0
    assert given["agent_factory"] is launch.worker_agent
    assert given["leaving"] is launch.stop_model_worker
    assert given["start_worker"].func is launch.start_model_worker
    assert not remote.in_use()  # nothing is switched on before the load thread runs


def test_the_quit_hook_stops_a_loaded_worker_and_leaves_an_unloaded_one_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch, "_leaving", False)
    stopped: list[bool] = []
    monkeypatch.setattr(remote, "stop_shared_worker", lambda: stopped.append(True))
    launch.stop_model_worker()
    assert stopped == [True]
    monkeypatch.delitem(sys.modules, "agentsh.llm.remote")  # the load thread never got there
    launch.stop_model_worker()  # nothing to stop, and nothing imported for it
    assert stopped == [True] and "agentsh.llm.remote" not in sys.modules


@pytest.fixture
def prewarms(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The early start's calls of :func:`remote.prewarm` (no process is started)."""
    monkeypatch.delenv("AGENTSH_MODEL_WORKER", raising=False)
    monkeypatch.setattr(launch, "_leaving", False)
    made: list[bool] = []
    monkeypatch.setattr(remote, "prewarm", lambda: made.append(remote.in_use()))
    monkeypatch.setattr(remote, "stop_shared_worker", lambda: None)
    return made


def test_the_first_key_starts_the_worker_when_a_model_is_configured(
    project: Path, agentsh_home: Path, prewarms: list[bool]
) -> None:
    env = load_environment(project)
    launch.start_model_worker(env, LaunchOptions(model="openai/gpt-4.1"))
    assert prewarms == [True]  # switched on first: the agent's client uses it too


def test_a_provider_key_is_a_configured_model(
    project: Path, agentsh_home: Path, prewarms: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    launch.start_model_worker(load_environment(project), LaunchOptions())
    assert prewarms == [True]


def test_no_worker_starts_without_a_configured_model(
    project: Path, agentsh_home: Path, prewarms: list[bool]
) -> None:
    launch.start_model_worker(load_environment(project), LaunchOptions())
    assert prewarms == [] and not remote.in_use()


def test_no_worker_starts_once_the_app_is_quitting(
    project: Path, agentsh_home: Path, prewarms: list[bool]
) -> None:
    """A key and a quit in the same moment: the quit hook ran first, so a worker started
    after it would be nobody's to stop (a process left behind)."""
    launch.stop_model_worker()
    launch.start_model_worker(load_environment(project), LaunchOptions(model="openai/gpt-4.1"))
    assert prewarms == []


def test_the_worker_model_worker_off_starts_nothing(
    project: Path, agentsh_home: Path, prewarms: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTSH_MODEL_WORKER", "0")
    launch.start_model_worker(load_environment(project), LaunchOptions(model="openai/gpt-4.1"))
    assert prewarms == []
