"""The system prompt is frozen for the session: the same bytes at every step."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agentsh import prompt as prompt_module
from agentsh.config import load_environment
from agentsh.memory.curated import CuratedMemory
from agentsh.prompt import SystemPrompt


class _Clock(dt.date):
    """A date whose today() moves one day at each call (a session running past midnight)."""

    calls = 0

    @classmethod
    def today(cls) -> _Clock:
        cls.calls += 1
        return cls(2026, 1, 1) + dt.timedelta(days=cls.calls)  # type: ignore[return-value]


def test_the_system_prompt_does_not_change_when_the_date_does(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_module, "date", _Clock)
    env = load_environment(project)
    memory = CuratedMemory(env.project, env.user, env.settings.memory)
    system = SystemPrompt(env, project, memory=memory)
    first = system.render()
    assert "- Date: 2026-01-0" in first
    assert system.render() == first
