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
    assert err.startswith("agentsh: -r needs a session id") and len(err.splitlines()) == 1
