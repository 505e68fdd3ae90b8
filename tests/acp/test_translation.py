"""The pure parts of the ACP front end: events and entries as updates, prompts as text, and
stdout claimed for the protocol before anything can print."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from agentsh.acp.frames import screened
from agentsh.acp.prompt import prompt_text
from agentsh.acp.replay import replay
from agentsh.acp.updates import (
    diff_contents,
    fenced,
    first_changed_line,
    locations,
    note,
    plan_from_text,
    tool_call_id,
    usage_update,
)
from agentsh.events import ContextStatus
from agentsh.session.session import Session
from agentsh.tools.file_diff import unified_diff
from agentsh.values import Role, ToolCall


def test_a_diff_becomes_one_acp_diff_per_hunk() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 40))
    new = old.replace("line 3\n", "line three\n").replace("line 30\n", "")
    diff, _added, _removed = unified_diff(old, new, "f.txt")
    first, second = diff_contents("/p/f.txt", diff)
    assert first.type == "diff" and first.path == "/p/f.txt"
    assert "line 3\n" in (first.old_text or "") and "line three\n" in first.new_text
    assert "line 30\n" in (second.old_text or "") and "line 30\n" not in second.new_text
    assert first_changed_line(diff) == 3


def test_the_location_of_an_edit_is_its_first_changed_line_not_the_context_before() -> None:
    """The editor follows the agent to the line that changed: the hunk's start is three
    lines of context above it (an edit "first at line 20" was located at line 17)."""
    old = "".join(f"l{i}\n" for i in range(1, 30))
    changed, _, _ = unified_diff(old, old.replace("l20\n", "L20\n"), "f.txt")
    assert first_changed_line(changed) == 20
    deleted, _, _ = unified_diff(old, old.replace("l20\n", ""), "f.txt")
    assert first_changed_line(deleted) == 20  # where the gap is in the new file
    added, _, _ = unified_diff(old, old + "l30\n", "f.txt")
    assert first_changed_line(added) == 30


def test_a_created_file_has_no_old_text() -> None:
    diff, _, _ = unified_diff("", "hello\nworld\n", "new.txt", created=True)
    (only,) = diff_contents("/p/new.txt", diff)
    assert only.old_text is None and only.new_text == "hello\nworld\n"


def test_a_diff_agentsh_could_not_show_is_sent_as_text() -> None:
    (only,) = diff_contents("/p/x.bin", "(replaces a binary or non-UTF-8 file of 3.0 KB)\n")
    assert only.type == "content"


def test_a_task_list_is_a_plan() -> None:
    plan = plan_from_text("Plan:\n- [x] read the code\n- [ ] fix the bug\n* [~] run tests\n")
    assert plan is not None
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read the code", "completed"),
        ("fix the bug", "pending"),
        ("run tests", "in_progress"),
    ]
    assert plan_from_text("- [ ] just one") is None
    assert plan_from_text("no tasks here") is None


def test_tool_calls_are_unique_across_replies_and_located() -> None:
    assert tool_call_id("e1", "call_0") != tool_call_id("e2", "call_0")
    (where,) = locations("edit", {"path": "src/a.py"}, Path("/proj"), 7)
    assert where.path == "/proj/src/a.py" and where.line == 7
    assert locations("bash", {"command": "ls"}, Path("/proj")) == []


def test_fences_outgrow_the_backticks_inside() -> None:
    assert fenced("a ``` b").startswith("````\n")
    assert fenced("plain", "sh") == "```sh\nplain\n```"


def test_notes_are_quoted_paragraphs() -> None:
    chunk = note("agentsh: two\nlines")
    assert chunk.content.text == "\n\n> agentsh: two\n> lines\n\n"


def test_usage_update_reports_window_and_cost() -> None:
    update = usage_update(ContextStatus(used=1200, window=128_000, session_cost=0.5))
    assert (update.used, update.size) == (1200, 128_000)
    assert update.cost is not None and update.cost.currency == "USD"
    assert usage_update(ContextStatus(used=1, window=2)).cost is None


def test_prompt_blocks_become_one_message() -> None:
    given = prompt_text(
        [
            TextContentBlock(type="text", text="look at"),
            ResourceContentBlock(type="resource_link", name="a.py", uri="file:///p/a%20b.py"),
            EmbeddedResourceContentBlock(
                type="resource",
                resource=TextResourceContents(uri="file:///p/c.py", text="x = 1\n"),
            ),
            ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
        ]
    )
    assert given.text.startswith("look at `/p/a b.py`")
    assert "Contents of `/p/c.py`:\n\n```\nx = 1\n```" in given.text
    assert given.skipped == ["image"]


def test_stdout_is_claimed_before_anything_prints(tmp_path: Path) -> None:
    """Prints, warnings, logging and child processes after the claim reach stderr; only what
    the protocol writes reaches stdout."""
    script = """
import logging, os, subprocess, sys, warnings
from agentsh.acp.stdio import claim_stdio
pipes = claim_stdio()
print("a stray print")
warnings.warn("a warning")
logging.getLogger("lib").warning("a log line")
subprocess.run(["echo", "a child process"])
os.write(1, b"raw fd 1\\n")
os.write(pipes.write_fd, b'{"jsonrpc": "2.0", "method": "x"}\\n')
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == '{"jsonrpc": "2.0", "method": "x"}\n'
    for line in ("a stray print", "a warning", "a log line", "a child process", "raw fd 1"):
        assert line in done.stderr


class _Serves:
    """A host that serves everything (only its flags matter to hosted_path)."""

    reads_files = writes_files = runs_commands = True


def test_the_host_serves_project_files_only(tmp_path: Path) -> None:
    from agentsh.tools.host import hosted_path

    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    inside = root / "src" / "a.py"
    inside.write_text("x\n")
    (root / "alias.py").symlink_to(inside)
    outside = tmp_path / "secret.txt"
    outside.write_text("s\n")
    (root / "out.txt").symlink_to(outside)
    linked = root / "linked.txt"
    linked.write_text("l\n")
    (tmp_path / "other-name.txt").hardlink_to(linked)
    host = _Serves()
    assert hosted_path(inside, root, host, write=True) == inside
    assert hosted_path(root / "alias.py", root, host, write=False) == inside
    assert hosted_path(root / "new.py", root, host, write=True) == root / "new.py"
    assert hosted_path(root / "out.txt", root, host, write=False) is None
    assert hosted_path(outside, root, host, write=False) is None
    assert hosted_path(linked, root, host, write=True) is None  # a new inode, locally
    assert hosted_path(linked, root, host, write=False) == linked
    assert hosted_path(inside, root, None, write=False) is None


def test_a_replayed_tool_call_has_the_title_the_live_one_had(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "sessions", tmp_path)
    session.append_message(Role.USER, "wait for it")
    calls = (
        ToolCall(id="c1", name="mcp__fake__hang", arguments="{}", summary="fake: hang"),
        ToolCall(id="c2", name="bash", arguments='{"command": "ls -la"}'),  # an older log
    )
    session.append_message(Role.ASSISTANT, "", tool_calls=calls)
    session.append_tool_result("c1", "mcp__fake__hang", "Cancelled by the user", is_error=True)
    session.append_tool_result("c2", "bash", "total 0")
    updates = list(replay(session.current_path(), tmp_path))
    session.close()
    started = [u for u in updates if u.session_update == "tool_call"]
    assert [(u.title, u.status) for u in started] == [
        ("fake: hang", "failed"),
        ("bash: ls -la", "completed"),
    ]


def test_what_looks_like_a_response_is_passed_on_or_dropped_never_answered() -> None:
    """A response is never answered (two peers answering each other's bad responses would
    not stop); one with a usable id ends agentsh's wait even without a result (dropping it
    left a permission request waiting for its 300 s timeout)."""
    bare = b'{"jsonrpc": "2.0", "id": 3}'
    assert screened(bare) == ({"jsonrpc": "2.0", "id": 3}, None)
    for line in (b'{"jsonrpc": "2.0", "id": {"a": 1}, "result": 1}', b'{"result": 1}'):
        assert screened(line) == (None, None)
    assert screened(b'{"jsonrpc": "2.0", "id": null, "error": {"code": 1}}') == (None, None)
    request = b'{"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}}'
    assert screened(request)[0] is not None
    _, answer = screened(b'{"jsonrpc": "2.0", "id": true, "method": "session/list"}')
    assert answer is not None and answer["id"] is None and answer["error"]["code"] == -32600
