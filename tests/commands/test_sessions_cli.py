"""`agentsh sessions`, `sessions show` and `sessions export`, in process and as a real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.session.entries import Role
from agentsh.session.session import Session
from tests.session.helpers import header, line, message, new_project_session, user_paths

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def branched_session(project: Path) -> Session:
    """user -> assistant(call) -> tool -> assistant, then a second answer to the first question,
    a label on the question, and unsafe text for the HTML export to escape."""
    session = new_project_session(project, turns=1, title="Fix <b>the</b> `parser`")
    assert session.path is not None
    session = Session.open(session.path)
    question = session.tree.roots[0]
    session.set_label(question, "start")
    session.move_leaf(question)
    session.append_message(Role.ASSISTANT, "A second answer </pre><script>alert(1)</script>")
    session.close()
    return session


def damaged_session(project: Path) -> Path:
    folder = user_paths().project_sessions_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "20260101T000000000000Z_damaged-0001.jsonl"
    path.write_bytes(
        header("damaged-0001", cwd=str(project))
        + message("m1", None, "the question")
        + b"garbage in the middle\n"
        + message("m2", "m1", "the answer", role="assistant")
        + message("o1", "ghost")
        + b'{"type":"message","id":"m3","par'
    )
    return path


# -- list ----------------------------------------------------------------------------------


def test_list_with_no_sessions_says_so(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "sessions")
    assert code == 0 and "no sessions in this project yet" in out and err == ""
    code, out, _ = run(capsys, "sessions", "--json")
    assert code == 0 and json.loads(out) == []


def test_list_shows_a_compact_table_newest_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = new_project_session(project, turns=1, title="older question", cost=0.25)
    newer = new_project_session(project, turns=2, title="newer question")
    code, out, err = run(capsys, "sessions")
    lines = out.splitlines()
    assert code == 0 and err == ""
    assert lines[0].split() == ["ID", "AGE", "MSGS", "TOKENS", "COST", "TITLE"]
    assert lines[1].startswith(newer.id[:8]) and lines[1].endswith("newer question")
    assert lines[2].split()[:5] == [older.id[:8], "now", "3", "330", "$0.50"]
    assert len(lines) == 3


def test_list_all_includes_other_projects_with_their_folder(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    new_project_session(project, title="here")
    new_project_session(other, title="there")
    _, out, _ = run(capsys, "sessions")
    assert "here" in out and "there" not in out
    _, out, _ = run(capsys, "sessions", "--all")
    assert "PROJECT" in out.splitlines()[0] and "there" in out and str(other.name) in out


def test_list_json_has_full_ids_and_figures(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = new_project_session(project, turns=1)
    _, out, _ = run(capsys, "sessions", "--json")
    [item] = json.loads(out)
    assert item["id"] == session.id and item["path"] == str(session.path)
    assert (item["messages"], item["tokens"], item["title"]) == (3, 330, "first question")
    assert item["lastActivity"].endswith("Z")


# -- show ----------------------------------------------------------------------------------


def test_show_prints_a_readable_transcript_of_the_current_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = branched_session(project)
    code, out, err = run(capsys, "sessions", "show", session.id[:6])
    assert code == 0 and err == ""
    assert f"session {session.id}" in out
    assert "branch  2 of 2" in out
    assert "Fix <b>the</b> `parser`" in out and "[start]" in out
    assert "A second answer" in out
    assert "reading for 0" not in out  # the other branch is not on the current path


def test_show_tree_draws_every_branch_and_marks_the_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = branched_session(project)
    code, out, _ = run(capsys, "sessions", "show", session.id[:6], "--tree")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 5
    assert lines[0].startswith("• ") and "[start]" in lines[0]
    assert lines[1].startswith("├─ ") and "reading for 0" in lines[1]
    assert lines[-1].startswith("└─ • ") and lines[-1].endswith("<- leaf")


def test_show_json_gives_the_entries_of_the_current_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = branched_session(project)
    code, out, _ = run(capsys, "sessions", "show", session.id[:6], "--json")
    data = json.loads(out)
    assert code == 0
    assert data["session"]["id"] == session.id and data["leafId"] == session.leaf_id
    assert [e["id"] for e in data["entries"]] == data["pathIds"] == session.tree.path_ids()
    assert data["entries"][0]["role"] == "user" and data["labels"] == {
        session.tree.roots[0]: "start"
    }


@pytest.mark.parametrize("tree", [False, True], ids=["path", "tree"])
def test_streamed_show_json_is_the_same_document_as_in_memory(
    project: Path, capsys: pytest.CaptureFixture[str], tree: bool
) -> None:
    # The streamed writer copies canonical lines as they are; the result must not differ.
    import io

    from agentsh.session import export

    made = branched_session(project)
    (project / "damaged.jsonl").write_bytes(damaged_session(project).read_bytes())
    for path in (made.path, project / "damaged.jsonl"):
        assert path is not None
        session = Session.open(path, lock=False)
        out = io.StringIO()
        export.write_session_json(session, out, tree=tree)
        assert json.loads(out.getvalue()) == export.session_json(session, tree=tree)


def test_show_tree_json_gives_every_entry_with_its_children(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = branched_session(project)
    _, out, _ = run(capsys, "sessions", "show", session.id[:6], "--tree", "--json")
    data = json.loads(out)
    by_id = {e["id"]: e for e in data["entries"]}
    assert set(by_id) == set(session.tree.nodes)
    root = session.tree.roots[0]
    assert by_id[root]["children"] == session.tree.children_of(root)
    assert len(by_id[root]["children"]) == 2 and data["roots"] == [root]


def test_show_warns_once_per_damaged_line_and_shows_the_rest(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged_session(project)
    code, out, err = run(capsys, "sessions", "show", "damaged")
    warnings = err.splitlines()
    assert code == 0 and len(warnings) == 3
    assert all(
        w.startswith("agentsh: warning: 20260101T000000000000Z_damaged-0001.jsonl: line")
        for w in warnings
    )
    assert "the question" in out and "the answer" in out


def test_unknown_entry_types_are_shown_as_such(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = user_paths().project_sessions_dir(project)
    folder.mkdir(parents=True)
    (folder / "20260101T000000000000Z_future-1.jsonl").write_bytes(
        header("future-1")
        + message("m1", None)
        + line({"type": "hologram", "id": "h1", "parentId": "m1", "timestamp": "t"})
    )
    _, out, _ = run(capsys, "sessions", "show", "future")
    assert "unknown entry type 'hologram'" in out
    _, out, _ = run(capsys, "sessions", "export", "future", "--format", "md")
    assert "Unknown entry type `hologram`" in out


@pytest.mark.parametrize("command", ["show", "export"])
def test_unknown_and_ambiguous_ids_are_one_line_errors(
    project: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    folder = user_paths().project_sessions_dir(project)
    folder.mkdir(parents=True)
    for session_id in ("aaa-1", "aaa-2"):
        (folder / f"20260101T000000000000Z_{session_id}.jsonl").write_bytes(
            header(session_id) + message("m1", None)
        )
    code, out, err = run(capsys, "sessions", command, "zzz")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("agentsh: no session id starts with 'zzz'")
    code, out, err = run(capsys, "sessions", command, "aaa")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "matches 2 sessions" in err and "aaa-1" in err


def test_an_unreadable_session_file_is_a_one_line_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The catalog lists it (it has an id), but its header cannot be loaded.
    folder = user_paths().project_sessions_dir(project)
    folder.mkdir(parents=True)
    bad = {"type": "session", "version": "two", "id": "badver-1", "timestamp": "t", "cwd": "/"}
    (folder / "20260101T000000000000Z_badver-1.jsonl").write_bytes(line(bad) + message("m1", None))
    for command in ("show", "export"):
        code, out, err = run(capsys, "sessions", command, "badver")
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and "bad session header" in err


# -- export --------------------------------------------------------------------------------


def test_export_markdown_of_the_current_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = branched_session(project)
    code, out, _ = run(capsys, "sessions", "export", session.id[:6], "--format", "md")
    assert code == 0 and out.startswith(f"# Session {session.id[:8]}")
    assert "## User — start" in out and "A second answer" in out
    assert "reading for 0" not in out


def test_export_html_is_self_contained_and_escaped(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = branched_session(project)
    target = tmp_path / "out.html"
    code, _, err = run(
        capsys, "sessions", "export", session.id[:6], "--format", "html", "-o", str(target)
    )
    page = target.read_text()
    assert code == 0 and str(target) in err
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;/pre&gt;" in page and "Fix &lt;b&gt;the&lt;/b&gt;" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page


def test_export_jsonl_is_the_exact_bytes_of_the_valid_lines(
    project: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = damaged_session(project)
    code = main(["sessions", "export", "damaged", "--format", "jsonl"])
    out, err = capsysbinary.readouterr()
    original = path.read_bytes().split(b"\n")
    assert code == 0
    assert out == b"\n".join([original[0], original[1], original[3]]) + b"\n"
    assert err.count(b"warning") == 3


def test_export_jsonl_of_a_healthy_session_is_the_file_itself(
    project: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    session = branched_session(project)
    assert main(["sessions", "export", session.id[:6], "--format", "jsonl"]) == 0
    assert session.path is not None
    assert capsysbinary.readouterr().out == session.path.read_bytes()


def test_export_to_an_unwritable_place_is_a_one_line_error(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = new_project_session(project)
    code, _, err = run(
        capsys, "sessions", "export", session.id[:6], "-o", str(tmp_path / "no" / "such" / "x.md")
    )
    assert code == 1 and err.count("\n") == 1 and err.startswith("agentsh: cannot write")


# -- the real command ----------------------------------------------------------------------


def _agentsh(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentsh", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )


def test_the_real_command_lists_shows_and_fails_cleanly(project: Path) -> None:
    session = branched_session(project)
    listed = _agentsh("sessions", "--json", cwd=project)
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["id"] == session.id
    shown = _agentsh("sessions", "show", session.id[:8], "--json", cwd=project)
    assert shown.returncode == 0 and json.loads(shown.stdout)["leafId"] == session.leaf_id
    missing = _agentsh("sessions", "show", "nope", cwd=project)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("agentsh: no session id starts with 'nope'")
    assert "Traceback" not in missing.stderr and missing.stderr.count("\n") == 1


def test_export_refuses_to_overwrite_the_session_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = new_project_session(project)
    assert session.path is not None
    before = session.path.read_bytes()
    code, _, err = run(
        capsys, "sessions", "export", session.id[:6], "--format", "jsonl", "-o", str(session.path)
    )
    assert code == 1 and "refusing to overwrite" in err
    assert session.path.read_bytes() == before
