"""A session id from a file becomes a path part only when it is one plain, safe name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.paths import UserPaths, checked_session_id
from agentsh.session.log import SessionError
from agentsh.session.session import Session


@pytest.mark.parametrize(
    "bad", ["../../evil", "..", "a/b", "/abs", "", ".hidden", "a\x00b", "x" * 200, "a\\..\\b"]
)
def test_unsafe_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a valid session id"):
        checked_session_id(bad)
    with pytest.raises(ValueError):
        UserPaths.from_env().session_workspace(bad)


def test_real_ids_pass() -> None:
    for good in ("0b7c9e9e-5f7e-4c1e-9a52-2f4d2f0f6a11", "abc123", "s_1.2-x"):
        assert checked_session_id(good) == good


def test_a_session_file_whose_header_id_climbs_out_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    header = {"type": "session", "version": 1, "id": "../../../tmp/pwned", "cwd": str(tmp_path)}
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(SessionError, match="not a valid session id"):
        Session.open(path)
