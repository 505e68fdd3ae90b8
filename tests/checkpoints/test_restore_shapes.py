"""A file that became a folder of the same name, and back: the restore clears its own way
(deletions first), or keeps both sides when something else is in that folder."""

from __future__ import annotations

from pathlib import Path

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
