"""Control sequences in model text are shown, never sent, in everything printed outside the TUI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.conftest import AgentshRunner
from tests.fakes.in_process import Finished, run_cli
from tests.fakes.server import ScriptedServer, text

# An OSC 52 clipboard write, a screen clear, a C1 CSI, a carriage-return overwrite and a
# right-to-left override (which reorders what a reader sees).
HOSTILE = "Done.\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x9b31m\rall good\u202e"
# What a terminal acts on that JSON carries raw unless escaped (JSON escapes C0 itself).
RAW_IN_JSON = ("\x9b", "\u202e")


def _strings(value: object) -> list[str]:
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _agentsh(*args: str) -> Finished:
    """``agentsh ARGS`` in the project folder (the current one), in this process."""
    return run_cli(args)


def test_print_mode_sessions_show_and_markdown_export_show_escapes(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    scripted_server.script(text(HOSTILE), text(HOSTILE))
    run = run_agentsh("-p", "hi")
    assert run.code == 0, run.stderr
    for raw in ("\x1b", "\x07", "\x9b", "\r"):
        assert raw not in run.stdout
    assert "\\x1b]52;c;cm0gLXJmIH4=\\a\\x1b[2J\\x9b31m\\rall good" in run.stdout

    as_json = run_agentsh("-p", "hi\u202e\x9b", "--output-format", "json")
    assert json.loads(as_json.stdout)["result"] == HOSTILE  # the same text, once parsed
    assert not any(raw in as_json.stdout for raw in RAW_IN_JSON)

    session_id = json.loads(as_json.stdout)["session_id"]
    shown = _agentsh("sessions", "show", session_id[:8])
    assert shown.code == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\\x1b]52" in shown.stdout
    exported = _agentsh("sessions", "export", session_id[:8])
    assert exported.code == 0, exported.stderr
    assert "\x1b" not in exported.stdout and "\\x1b[2J" in exported.stdout
    # Machine-readable forms: the same JSON, nothing a terminal would act on.
    for args in (("sessions", "--json"), ("sessions", "show", "--json", session_id[:8])):
        listed = _agentsh(*args)
        assert listed.code == 0, listed.stderr
        assert any("hi\u202e\x9b" in t for t in _strings(json.loads(listed.stdout)))
        assert not any(raw in listed.stdout for raw in RAW_IN_JSON), args
    for fmt in ("jsonl", "pi"):
        exported = _agentsh("sessions", "export", session_id[:8], "--format", fmt)
        assert exported.code == 0, exported.stderr
        assert not any(raw in exported.stdout for raw in RAW_IN_JSON), fmt
        lines = [json.loads(line) for line in exported.stdout.splitlines()]
        assert any(HOSTILE in t for t in _strings(lines)), fmt
