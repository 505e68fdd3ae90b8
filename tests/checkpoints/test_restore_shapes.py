"""A file that became a folder of the same name, and back: the restore clears its own way
(deletions first), or keeps both sides when something else is in that folder."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsh.checkpoints.capture as capture_module
from agentsh.checkpoints.restore import diff_text
from tests.checkpoints.conftest import Driver, files_of


def test_a_file_that_became_a_folder_comes_back_and_goes_again(driver: Driver, repo: Path) -> None:
    (repo / "util").write_text("A = 1\n")
    start = driver.user("make util a package")

    def to_package() -> None:
        (repo / "util").unlink()
        (repo / "util").mkdir()
        (repo / "util" / "__init__.py").write_text("A = 2\n")
        (repo / "util" / "sub").mkdir()
        (repo / "util" / "sub" / "x.py").write_text("X = 1\n")

    driver.tool("bash", to_package)
    package = files_of(repo)
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action, i.problem) for i in plan.items] == [
        ("util", "create", ""),
        ("util/__init__.py", "delete", ""),
        ("util/sub/x.py", "delete", ""),
    ]
    result = driver.checkpointer.restore(driver.session, plan)
    assert result.failed == []
    assert (repo / "util").read_text() == "A = 1\n"
    assert result.undo is not None
    undo = driver.checkpointer.plan_record(result.undo)
    assert [i.problem for i in undo.items] == ["", "", ""]  # the file util is in the way
    assert driver.checkpointer.restore(driver.session, undo).failed == []
    assert files_of(repo) == package


def test_a_folder_holding_other_files_keeps_the_whole_change_as_it_is(
    driver: Driver, repo: Path
) -> None:
    (repo / "util").write_text("A = 1\n")
    start = driver.user("make util a package")

    def to_package() -> None:
        (repo / "util").unlink()
        (repo / "util" / "__pycache__").mkdir(parents=True)
        (repo / "util" / "__init__.py").write_text("A = 2\n")
        (repo / "util" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0pyc")

    driver.tool("bash", to_package)
    package = files_of(repo)
    plan = driver.checkpointer.plan(driver.session, start.id)
    items = {i.path: i.problem for i in plan.items}
    assert "not cover" in items["util"]
    assert "as util is" in items["util/__init__.py"]
    driver.checkpointer.restore(driver.session, plan)
    assert files_of(repo) == package  # not half restored: neither util nor util/__init__.py


def test_an_executable_bit_goes_back_and_forth_with_git_quiet_in_between(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chmod +x`` on a tracked file, restored away and back: once the file is as the git
    index has it again, ``git status`` says nothing of it, and the stat cache must still
    learn its mode (it kept 0755 and the way back failed: "app.py changed after the restore
    was planned")."""
    monkeypatch.setattr(capture_module, "RACY_NS", 0)  # no file counts as just modified
    start = driver.user("make it executable")
    after = driver.tool("bash", lambda: (repo / "app.py").chmod(0o755))
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action, i.outside) for i in plan.items] == [("app.py", "mode", False)]
    driver.checkpointer.restore(driver.session, plan)
    assert (repo / "app.py").stat().st_mode & 0o777 == 0o644
    back = driver.checkpointer.plan(driver.session, after.id)
    assert [(i.path, i.action, i.outside) for i in back.items] == [("app.py", "mode", False)]
    recorder = driver.checkpointer.recorder
    assert diff_text(recorder, back.items[0]) == "app.py: mode 0644 -> 0755\n"
    assert driver.checkpointer.restore(driver.session, back).written == ["app.py"]
    assert (repo / "app.py").stat().st_mode & 0o777 == 0o755


def test_a_mode_that_differs_from_git_at_the_first_capture_is_watched(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(capture_module, "RACY_NS", 0)
    (repo / "app.py").chmod(0o755)  # before agentsh ever looked: not as git has it
    start = driver.user("make it plain again")
    driver.tool("bash", lambda: (repo / "app.py").chmod(0o644))  # git status: quiet
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action) for i in plan.items] == [("app.py", "mode")]


def test_a_name_with_a_line_break_or_an_escape_stays_on_its_one_line(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "Binary file" and "mode" lines printed the raw name: 'a<LF>b' split the line in
    two (a name could forge a line of the restore's output) and ESC reached the terminal.
    They are escaped as the diff header escapes them."""
    monkeypatch.setattr(capture_module, "RACY_NS", 0)
    binary, script = "blob\nforged.bin", "run\x1b[2J.sh"
    (repo / binary).write_bytes(b"\0one")
    (repo / script).write_text("echo hi\n")
    start = driver.user("change them")

    def change() -> None:
        (repo / binary).write_bytes(b"\0two")
        (repo / script).chmod(0o755)

    driver.tool("bash", change)
    plan = driver.checkpointer.plan(driver.session, start.id)
    recorder = driver.checkpointer.recorder
    shown = {i.path: diff_text(recorder, i) for i in plan.items}
    assert shown == {
        binary: "Binary file blob\\nforged.bin differs\n",
        script: "run\\x1b[2J.sh: mode 0755 -> 0644\n",
    }


def test_a_restore_brings_back_no_set_user_or_group_id_bit_and_says_so(
    driver: Driver, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that was setuid at the checkpoint came back setuid (the mode was written as
    captured): a restore could hand out a set-user-ID program. As git does, the bits are not
    restored, and the plan and the result say so."""
    monkeypatch.setattr(capture_module, "RACY_NS", 0)
    tool = repo / "tool.sh"
    tool.write_text("echo one\n")
    tool.chmod(0o6755)
    start = driver.user("change the tool")

    def change() -> None:
        tool.write_text("echo two\n")
        tool.chmod(0o755)

    driver.tool("bash", change)
    plan = driver.checkpointer.plan(driver.session, start.id)
    assert [(i.path, i.action) for i in plan.items] == [("tool.sh", "modify")]
    item = plan.items[0]
    assert item.id_bits_dropped == "set-user-ID and set-group-ID bits"
    assert diff_text(driver.checkpointer.recorder, item).endswith(
        "tool.sh: its set-user-ID and set-group-ID bits are not restored (as git does)\n"
    )
    assert item.to_json()["idBitsDropped"] is True
    result = driver.checkpointer.restore(driver.session, plan)
    assert result.written == ["tool.sh"] and result.id_bits_dropped == ["tool.sh"]
    assert tool.read_text() == "echo one\n"
    assert tool.stat().st_mode & 0o7777 == 0o755
    # The bits alone are no change to offer: the file is as restored.
    assert driver.checkpointer.plan(driver.session, start.id).items == ()


def test_agentsh_restore_names_the_id_bits_a_file_comes_back_without() -> None:
    from agentsh.checkpoints.restore import PlanItem
    from agentsh.commands.checkpoints_cmd import _item_line

    item = PlanItem("tool.sh", "modify", ("ref", 0o104755), ("ref2", 0o100755), 1, 1)
    assert _item_line(item, overwrite=False) == (
        "M tool.sh  +1 -1  (without its set-user-ID bit, as git does)"
    )
