"""Fixtures of the headless tests: ``agentsh -p`` run as a process against the scripted server
(shared with the agent's tests, which drive the same process)."""

from __future__ import annotations

from tests.agent.conftest import fast_retries, run_agentsh  # noqa: F401 - shared fixtures
