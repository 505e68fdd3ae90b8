"""``agentsh checkpoints`` and ``agentsh restore`` as a script uses them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.session.entries import Role
from agentsh.session.session import Session
from tests.checkpoints.conftest import INITIAL, Driver, files_of


def test_listing_and_a_dry_run_show_the_files_and_change_nothing(
    driver: Driver, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = driver.user("go")

    def remove_one_add_one() -> None:
        (repo / "old.txt").unlink()
        (repo / "n.txt").write_text("n\n")

    driver.tool("bash", remove_one_add_one)
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    driver.session.close()
    sid = driver.session.id[:8]
    after = files_of(repo)

    assert main(["checkpoints", sid]) == 0
    listing = capsys.readouterr().out
    assert "✎ 2 files: n.txt, old.txt" in listing and "✎ 1 file: app.py" in listing
    assert main(["sessions", "show", sid, "--tree"]) == 0
    tree = capsys.readouterr().out
    assert "bash -> ok: ok ✎ 2 files" in tree and "write -> ok: ok ✎ 1 file" in tree
    assert main(["checkpoints", sid, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["checkpoints"]
    assert [row["changed"] for row in rows] == [0, 2, 1]

    assert main(["restore", sid, start.id, "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "would restore the files of" in plan
    assert "M app.py  +2 -1" in plan and "A old.txt  +1 -0" in plan and "D n.txt  +0 -1" in plan
    assert main(["restore", sid, start.id, "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {f["path"]: f["action"] for f in data["files"]} == {
        "app.py": "modify",
        "n.txt": "delete",
        "old.txt": "create",
    }
    assert files_of(repo) == after

    assert main(["restore", sid, start.id]) == 0
    out = capsys.readouterr().out
    assert "restored 3 files" in out
    assert files_of(repo) == INITIAL


def test_mistakes_end_in_one_line_and_nothing_is_created(
    repo: Path, agentsh_home: Path, user_paths: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentsh.paths import UserPaths

    session = Session.create(UserPaths.from_env().project_sessions_dir(repo), repo)
    entry = session.append_message(Role.USER, "hi")
    session.close()
    sid = session.id[:8]
    assert main(["checkpoints", sid]) == 0
    assert "no file checkpoints" in capsys.readouterr().out
    assert main(["restore", sid, "zzzz"]) == 1
    assert "no entry or checkpoint 'zzzz'" in capsys.readouterr().err
    assert main(["restore", sid, entry.id, "--dry-run"]) == 1
    assert "no checkpoint of the files" in capsys.readouterr().err
    assert not (agentsh_home / "data" / "checkpoints").exists()


def test_a_session_open_elsewhere_is_not_restored_but_can_be_planned(
    driver: Driver, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = driver.user("go")
    driver.tool("write", lambda: (repo / "app.py").write_text("v2\n"))
    driver.session.sync()  # still open (locked), as in a running agentsh
    sid = driver.session.id[:8]
    assert main(["restore", sid, start.id]) == 1
    assert "--dry-run" in capsys.readouterr().err
    assert main(["restore", sid, start.id, "--dry-run"]) == 0
    assert (repo / "app.py").read_text() == "v2\n"


def test_names_from_the_project_are_printed_without_their_escape_sequences(
    driver: Driver, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    driver.user("go")
    driver.tool("write", lambda: (repo / "evil\x1b]52;c;aGk=\x07.txt").write_text("x\n"))
    driver.session.close()
    assert main(["checkpoints", driver.session.id[:8]]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "evil\\x1b]52" in out
