"""The editor's additional directories, checked before any is read without asking."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.acp.folders import MAX_FOLDERS, client_folders


def test_links_to_the_home_folder_and_folders_holding_it_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "me"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "to-home").symlink_to(home)
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (home / "work").mkdir()
    given = [
        str(tmp_path / "to-home"),
        str(tmp_path / "home"),
        str(project / "sub"),  # inside the project: adds nothing
        str(home / "work"),
        str(home / "work"),  # twice: once
        str(home / "work\x1b[2J"),
        42,
    ]
    folders, problems = client_folders(given, project)
    assert folders == [home / "work"]
    ends = ["is the home folder or holds it", "is the home folder or holds it"]
    ends += ["holds control characters", "is not a path"]
    assert len(problems) == len(ends)
    assert all(p.endswith(f"{end}; not added") for p, end in zip(problems, ends, strict=True))
    assert "\x1b" not in "".join(problems)


def test_hidden_folders_of_the_home_folder_are_refused_even_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "me"
    for sub in (".ssh", ".config/gh", "work/.venv", "code"):
        (home / sub).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "keys").symlink_to(home / ".ssh")
    given = [str(home / ".ssh"), str(tmp_path / "keys"), str(home / ".config" / "gh")]
    given += [str(home / "work" / ".venv"), str(home / "code")]
    folders, problems = client_folders(given, tmp_path / "project")
    assert folders == [home / "code"]
    assert len(problems) == 4
    assert all("hidden folder of the home folder" in problem for problem in problems)


def test_a_flood_of_folders_is_cut(tmp_path: Path) -> None:
    folders, problems = client_folders([str(tmp_path)] * (MAX_FOLDERS + 5), tmp_path / "p")
    assert folders == [tmp_path]
    assert problems == [
        f"the editor gave {MAX_FOLDERS + 5} additional folders; only the first "
        f"{MAX_FOLDERS} were considered"
    ]
