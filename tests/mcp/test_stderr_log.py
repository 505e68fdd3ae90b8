"""An MCP server's stderr log holds none of the secrets it was given (agentsh.mcp.stderr_log)."""

from __future__ import annotations

import stat
from pathlib import Path

from agentsh.mcp.stderr_log import LINE_MAX, StderrLog

SECRET = "tok-9f8e7d6c5b4a3210"


def _logged(tmp_path: Path, *pieces: str) -> str:
    log = StderrLog(tmp_path / "logs" / "s.log", [SECRET])
    with log.opened("s --token ${T}") as writer:
        for piece in pieces:
            writer.write(piece)
            writer.flush()  # each piece reaches the pipe on its own, as a child writes it
    assert log.drained.wait(10)
    return (tmp_path / "logs" / "s.log").read_text()


def test_a_secret_in_a_line_is_redacted_and_the_file_is_private(tmp_path: Path) -> None:
    text = _logged(tmp_path, f"auth with {SECRET} failed\n", "bye\n")
    assert SECRET not in text
    assert text.endswith("auth with [REDACTED] failed\nbye\n")
    assert text.startswith("--- ") and "starting: s --token ${T}" in text
    assert stat.S_IMODE((tmp_path / "logs" / "s.log").stat().st_mode) == 0o600


def test_a_secret_split_across_writes_of_a_very_long_line_is_still_redacted(
    tmp_path: Path,
) -> None:
    head = "x" * (LINE_MAX + 10)
    text = _logged(tmp_path, head + SECRET[:7], SECRET[7:] + " tail without a newline")
    assert SECRET not in text
    assert text.endswith(head + "[REDACTED] tail without a newline")
