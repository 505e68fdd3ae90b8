"""Which session the command-line options open, and how a bad choice is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.cli import main


@pytest.mark.parametrize("content", [None, b"", b"not json\n"], ids=["missing", "empty", "junk"])
def test_headless_with_a_bad_session_file_fails_in_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], content: bytes | None
) -> None:
    path = project / "broken.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert main(["-p", "hello", "--session", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentsh: ") and str(path) in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_headless_resume_without_an_id_says_one_is_needed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-p", "hello", "-r"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agentsh: -r needs a session name or id") and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--no-session", "-c"], "--no-session and -c/--continue"),
        (["-c", "-r", "abc"], "-c/--continue and -r/--resume"),
        (["--session", "x.jsonl", "-c"], "--session and -c/--continue"),
    ],
)
def test_two_ways_of_choosing_the_session_are_refused_not_one_dropped(
    project: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    assert main(["-p", "hello", *options]) == 2
    err = capsys.readouterr().err
    assert err == f"agentsh: {named} cannot be used together; pick one\n"


def test_a_run_refused_before_its_agent_starts_no_model_worker(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentsh.llm import remote

    started: list[bool] = []
    monkeypatch.setattr(remote, "prewarm", lambda: started.append(True))
    assert main(["-p", "hello", "-c", "-r", "abc"]) == 2
    assert main(["-p", "hello", "--session", str(project / "missing.jsonl")]) == 1
    assert started == []  # litellm's seconds of CPU are not spent on a run that cannot start
