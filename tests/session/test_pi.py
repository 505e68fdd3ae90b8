"""Pi session files: told apart from agentsh's, imported, exported, round-tripped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.session.entries import LabelEntry, MessageEntry, NameEntry, Role, ToolResultEntry
from agentsh.session.pi import looks_like_pi, read_pi, to_pi_lines
from agentsh.session.session import Session
from tests.session.helpers import new_project_session

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "pi" / "session-v3.jsonl"


def test_a_pi_file_is_told_apart_from_an_agentsh_file(project: Path, agentsh_home: Path) -> None:
    assert looks_like_pi(SAMPLE.read_bytes())
    ours = new_project_session(project, turns=1)
    assert ours.path is not None and not looks_like_pi(ours.path.read_bytes())


def test_import_keeps_the_tree_and_counts_what_it_drops() -> None:
    imported = read_pi(SAMPLE.read_bytes(), "sample")
    by_id = {e.id: e for e in imported.entries}
    question = by_id["aa000003"]
    # Its Pi parent (a thinking-level change) is not kept: it hangs from the model change.
    assert question.parent_id == "aa000001"
    assert isinstance(question, MessageEntry) and question.content == "list the files"
    reply = by_id["aa000004"]
    assert isinstance(reply, MessageEntry) and reply.role is Role.ASSISTANT
    assert reply.model == "anthropic/claude-sonnet-4-5"
    assert [c.name for c in reply.tool_calls] == ["bash"]
    assert reply.usage is not None and reply.usage.cost == pytest.approx(0.003)
    result = by_id["aa000005"]
    assert isinstance(result, ToolResultEntry) and result.tool_call_id == "toolu_1"
    assert any(isinstance(e, LabelEntry) and e.label == "start" for e in imported.entries)
    assert imported.dropped == {
        "image blocks": 1,
        "thinking blocks": 1,
        "thinking-level changes": 1,
    }
    # Pi's /name becomes the session's name.
    assert [e.name for e in imported.entries if isinstance(e, NameEntry)] == ["File listing"]


def test_import_command_makes_a_session_that_resumes_on_pi_leaf(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sessions", "import", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "0b9e3c1a-1111-4222-8333-444455556666" in out
    (path,) = (agentsh_home / "data" / "sessions").rglob("*.jsonl")
    session = Session.open(path, lock=False)
    assert session.problems == []
    assert session.leaf_id == "aa000006"  # Pi's leaf: the last line, through what was dropped
    assert session.label("aa000003") == "start"
    assert session.name == "File listing"
    assert main(["sessions", "import", str(SAMPLE)]) == 0  # a second copy gets its own id
    assert len(list((agentsh_home / "data" / "sessions").rglob("*.jsonl"))) == 2


def test_a_pi_file_given_to_session_says_what_it_is(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was read as "a newer agentsh format" and every line failed.
    assert main(["-p", "hi", "--session", str(SAMPLE)]) == 1
    err = capsys.readouterr().err
    assert "is a Pi session file" in err and "agentsh sessions import" in err
    assert len(err.strip().splitlines()) == 1


def test_export_to_pi_and_back_keeps_every_branch_and_the_leaf(
    project: Path, agentsh_home: Path
) -> None:
    session = new_project_session(project, turns=2)
    assert session.path is not None
    session = Session.open(session.path)
    first = session.tree.roots[0]
    session.set_label(first, "here")
    session.move_leaf(first)
    session.append_message(Role.ASSISTANT, "another answer")
    session.close()
    assert session.path is not None
    session = Session.open(session.path, lock=False)
    lines = to_pi_lines(session.header, session.tree.records, session.tree.leaf_id)
    back = read_pi("\n".join(lines).encode(), "export")
    assert back.problems == []
    rebuilt = Session.create(None, project)
    for entry in back.entries:
        rebuilt.append(entry)
    assert rebuilt.tree.path_ids() == session.tree.path_ids()
    assert set(rebuilt.tree.nodes) == set(session.tree.nodes)
    assert rebuilt.label(first) == "here"
    contents = [getattr(e, "content", None) for e in rebuilt.current_path()]
    assert contents == [getattr(e, "content", None) for e in session.current_path()]


def test_a_name_goes_to_pi_as_session_info_and_pi_opens_on_the_leaf(
    project: Path, agentsh_home: Path
) -> None:
    session = new_project_session(project, turns=2)
    assert session.path is not None
    session = Session.open(session.path)
    first = session.tree.roots[0]
    session.set_name("parser fix")
    session.move_leaf(first)  # the leaf has entries below it: it cannot be the last node
    session.close()
    assert session.path is not None
    session = Session.open(session.path, lock=False)
    lines = to_pi_lines(session.header, session.tree.records, session.tree.leaf_id)
    last = json.loads(lines[-1])  # Pi's leaf is its last line: the name, below our leaf
    assert last["type"] == "session_info" and last["name"] == "parser fix"
    assert last["parentId"] == first
    back = read_pi("\n".join(lines).encode(), "export")
    assert back.problems == [] and back.dropped == {}
    rebuilt = Session.create(None, project)
    for entry in back.entries:
        rebuilt.append(entry)
    assert rebuilt.name == "parser fix"
    assert rebuilt.tree.path_ids() == session.tree.path_ids()
