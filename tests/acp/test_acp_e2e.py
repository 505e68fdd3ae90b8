"""``agentsh acp`` end to end: the ``acp`` package's client spawning the real agent, which talks
to the scripted model server. Two agents serve the module: one whose client offers nothing but
permission answers (files and commands stay local), one that plays an editor with file buffers
and terminals. After each test, every line the agents wrote on stdout must be a JSON-RPC frame.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from acp import RequestError, text_block
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    McpServerStdio,
    TextContentBlock,
)

from agentsh.paths import UserPaths
from agentsh.session.entries import MessageEntry, ToolCall
from agentsh.session.session import Session
from agentsh.values import Role, StopReason
from tests.acp.conftest import AcpAgent, Asked, EditorClient, spawn_acp
from tests.fakes.server import ErrorReply, Reply, text, tool_call
from tests.mcp.conftest import wait_gone

#: A real MCP server (the SDK's), run as a script as an editor would start it.
FAKE_MCP_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


def _reason(asked: Asked) -> str:
    """Why the agent asks: the text it puts last in the permission request."""
    content = asked.tool_call.content
    assert content is not None
    last = content[-1]
    assert isinstance(last, ContentToolCallContent) and isinstance(last.content, TextContentBlock)
    return last.content.text


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def plain(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AcpAgent]:
    """An agent whose client offers no files or terminals; approvals time out after 2 s.
    litellm logs everything and every warning is shown: all of it must stay off stdout."""
    root = tmp_path_factory.mktemp("acp-plain")
    (root / "project").mkdir()
    (root / "project" / "AGENTS.md").write_text("Always answer in French.\n")
    noisy = {"LITELLM_LOG": "DEBUG", "PYTHONWARNINGS": "always"}
    config = "[acp]\npermission_timeout_s = 2\n"
    async with spawn_acp(root, EditorClient(), config=config, extra_env=noisy) as a:
        yield a


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AcpAgent]:
    """An agent whose client serves file buffers and terminals, as Zed does."""
    root = tmp_path_factory.mktemp("acp-editor")
    async with spawn_acp(root, EditorClient(files=True, terminal=True)) as a:
        yield a


@pytest.fixture(autouse=True)
def _stdout_stays_json(request: pytest.FixtureRequest) -> Any:
    """Whatever a test did, the agents' stdout held JSON-RPC frames and nothing else."""
    yield
    for name in ("plain", "editor"):
        if name in request.fixturenames:
            agent: AcpAgent = request.getfixturevalue(name)
            assert agent.frames(), "the agent wrote nothing at all"


def _finals(client: EditorClient, sid: str) -> list[Any]:
    return [
        u for u in client.tool_updates(sid) if getattr(u, "status", None) in ("completed", "failed")
    ]


# -- the main path ------------------------------------------------------------------------------


async def test_initialize_then_new_session_offers_modes(plain: AcpAgent) -> None:
    caps = plain.initialized.agent_capabilities
    assert caps is not None and caps.load_session
    assert caps.prompt_capabilities is not None and caps.prompt_capabilities.embedded_context
    assert not caps.prompt_capabilities.image
    assert plain.initialized.agent_info is not None
    assert plain.initialized.agent_info.name == "agentsh"
    response = await plain.conn.new_session(cwd=str(plain.project), mcp_servers=[])
    assert response.modes is not None
    assert response.modes.current_mode_id == "ask"
    assert [m.id for m in response.modes.available_modes] == ["ask", "edits", "all", "plan"]


async def test_approved_command_streams_updates_and_ends_the_turn(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    client.answer = "allow_once"
    server.script(
        tool_call("bash", {"command": "echo made > made.txt && echo written"}),
        text("Le fichier est écrit."),
    )
    response = await plain.prompt(sid, "make a file")
    assert response.stop_reason == "end_turn"
    assert (plain.project / "made.txt").read_text() == "made\n"

    # The folder is not trusted: the thread says its AGENTS.md was left out, before the reply.
    assert "not trusted" in client.text(sid)
    assert "Always answer in French" not in json.dumps(server.requests[-1].body)

    (asked,) = [a for a in client.asked if a.session_id == sid]
    assert asked.tool_call.title == "bash: echo made > made.txt && echo written"
    assert {o.kind for o in asked.options} == {"allow_once", "allow_always", "reject_once"}

    kinds = client.kinds(sid)
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    start = next(u for u in client.updates[sid] if u.session_update == "tool_call")
    assert start.kind == "execute" and start.tool_call_id == asked.tool_call.tool_call_id
    (final,) = _finals(client, sid)
    assert final.status == "completed"
    assert "written" in final.content[-1].content.text
    assert client.text(sid).endswith("Le fichier est écrit.")
    usage = [u for u in client.updates[sid] if u.session_update == "usage_update"]
    assert usage and usage[-1].size == 128_000 and usage[-1].used > 0

    # An ordinary agentsh session: the whole turn is in its log.
    path = next((plain.home / "data" / "sessions").rglob(f"*_{sid}.jsonl"))
    session = Session.open(path, lock=False)
    roles = [e.role for e in session.current_path() if isinstance(e, MessageEntry)]
    assert roles == [Role.USER, Role.ASSISTANT, Role.ASSISTANT]


async def test_rejected_edit_is_not_made_and_the_model_is_told(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    target = plain.project / "keep.txt"
    target.write_text("keep me\n")
    sid = await plain.new_session()
    client.answer = "reject"
    server.script(
        tool_call("edit", {"path": "keep.txt", "old_text": "keep me", "new_text": "gone"}),
        text("D'accord."),
    )
    assert (await plain.prompt(sid, "change it")).stop_reason == "end_turn"
    assert target.read_text() == "keep me\n"
    (asked,) = [a for a in client.asked if a.session_id == sid]
    assert asked.tool_call.content is not None
    diffs = [c for c in asked.tool_call.content if isinstance(c, FileEditToolCallContent)]
    assert diffs and diffs[0].old_text == "keep me\n" and diffs[0].new_text == "gone\n"
    assert diffs[0].path == str(target)
    (final,) = _finals(client, sid)
    assert final.status == "failed"
    tool_messages = [m for m in server.requests[-1].messages if m["role"] == "tool"]
    assert "declined" in str(tool_messages[-1]["content"])


def _statuses(client: EditorClient, sid: str) -> list[str]:
    """The status every update of the session's one tool call carried, in order."""
    updates = [
        u for u in client.updates[sid] if u.session_update in ("tool_call", "tool_call_update")
    ]
    assert len({u.tool_call_id for u in updates}) == 1
    return [u.status for u in updates if u.status is not None]


async def test_a_call_is_pending_while_asked_and_in_progress_only_once_it_runs(
    plain: AcpAgent,
) -> None:
    client, server = plain.client, plain.server
    seen_when_asked: list[list[str]] = []

    def allow(tool_call: Any, options: Any) -> str:
        assert tool_call.status == "pending"
        seen_when_asked.append(_statuses(client, sid))
        return "allow_once"

    sid = await plain.new_session()
    client.answer = allow
    server.script(tool_call("bash", {"command": "echo ran"}), text("ok"))
    assert (await plain.prompt(sid, "run it")).stop_reason == "end_turn"
    assert seen_when_asked == [["pending"]]
    assert _statuses(client, sid) == ["pending", "in_progress", "completed"]

    # Rejected: it never ran, so it is never said to.
    sid = await plain.new_session()
    client.answer = "reject"
    server.script(tool_call("bash", {"command": "echo no"}), text("ok"))
    assert (await plain.prompt(sid, "run it")).stop_reason == "end_turn"
    assert _statuses(client, sid) == ["pending", "failed"]

    # Not asked (Allow all): pending while checked, then it runs.
    sid = await plain.new_session()
    await plain.conn.set_session_mode(session_id=sid, mode_id="all")
    server.script(tool_call("bash", {"command": "echo free"}), text("ok"))
    assert (await plain.prompt(sid, "run it")).stop_reason == "end_turn"
    assert _statuses(client, sid) == ["pending", "in_progress", "completed"]


async def test_an_unanswered_approval_is_refused_and_the_turn_goes_on(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    client.answer = "never"
    server.script(tool_call("bash", {"command": "touch never.txt"}), text("Compris."))
    response = await plain.prompt(sid, "touch it")
    assert response.stop_reason == "end_turn"
    assert not (plain.project / "never.txt").exists()
    assert "nobody answered" in client.text(sid)
    tool_messages = [m for m in server.requests[-1].messages if m["role"] == "tool"]
    assert "nobody answered in time" in str(tool_messages[-1]["content"])


async def test_cancel_mid_stream_keeps_what_arrived(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    words = " ".join(f"mot{i}" for i in range(300))
    server.script(Reply(text=words, delay_s=0.02))
    turn = asyncio.ensure_future(plain.prompt(sid, "talk for a while"))
    await client.wait_for(lambda: "mot5" in client.text(sid))
    await plain.conn.cancel(session_id=sid)
    response = await turn
    assert response.stop_reason == "cancelled"
    received = client.text(sid)
    assert "mot299" not in received
    path = next((plain.home / "data" / "sessions").rglob(f"*_{sid}.jsonl"))
    last = Session.open(path, lock=False).current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ABORTED
    assert last.content and last.content in received


async def test_cancel_while_asking_withdraws_the_question(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    client.answer = "never"
    server.script(tool_call("bash", {"command": "touch asked.txt"}))
    turn = asyncio.ensure_future(plain.prompt(sid, "touch it"))
    await client.wait_for(lambda: any(a.session_id == sid for a in client.asked))
    await plain.conn.cancel(session_id=sid)
    response = await asyncio.wait_for(turn, 1.5)  # well before the 2 s approval time limit
    assert response.stop_reason == "cancelled"
    assert not (plain.project / "asked.txt").exists()
    assert "nobody answered" not in client.text(sid)


async def test_a_call_the_cancel_left_unrun_is_closed_before_the_turn_ends(plain: AcpAgent) -> None:
    """Every tool call the editor was shown ends with a final status before the prompt's
    answer: a call whose question the cancel withdrew stayed "pending" for good (an editor
    that does not close pending calls itself keeps a spinner, or the question, on it)."""
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    client.answer = "never"
    server.script(tool_call("bash", {"command": "touch unrun.txt"}))
    turn = asyncio.ensure_future(plain.prompt(sid, "touch it"))
    await client.wait_for(lambda: any(a.session_id == sid for a in client.asked))
    await plain.conn.cancel(session_id=sid)
    assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
    (started,) = [u for u in client.updates[sid] if u.session_update == "tool_call"]
    (final,) = _finals(client, sid)
    assert final.tool_call_id == started.tool_call_id and final.status == "failed"
    assert "not run" in json.dumps(final.model_dump(mode="json"))
    assert not (plain.project / "unrun.txt").exists()


async def test_mode_all_runs_commands_without_asking(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    await plain.conn.set_session_mode(session_id=sid, mode_id="all")
    asked_before = len(client.asked)
    server.script(tool_call("bash", {"command": "echo free"}), text("ok"))
    assert (await plain.prompt(sid, "run it")).stop_reason == "end_turn"
    assert len(client.asked) == asked_before
    (final,) = _finals(client, sid)
    assert final.status == "completed"

    # Plan mode: nothing runs, and the model is told why.
    await plain.conn.set_session_mode(session_id=sid, mode_id="plan")
    server.script(tool_call("bash", {"command": "touch planned.txt"}), text("the plan"))
    assert (await plain.prompt(sid, "do it")).stop_reason == "end_turn"
    assert not (plain.project / "planned.txt").exists()
    assert "plan mode" in str(server.requests[-1].messages[-1]["content"])


async def test_a_mode_change_is_told_as_current_mode_update(plain: AcpAgent) -> None:
    client = plain.client
    sid = await plain.new_session()
    for mode in ("edits", "plan", "ask"):
        await plain.conn.set_session_mode(session_id=sid, mode_id=mode)
    await client.wait_for(lambda: client.kinds(sid).count("current_mode_update") == 3)
    updates = client.updates[sid]
    told = [u.current_mode_id for u in updates if u.session_update == "current_mode_update"]
    assert told == ["edits", "plan", "ask"]

    # A refused mode is no change: nothing is told.
    with pytest.raises(RequestError):
        await plain.conn.set_session_mode(session_id=sid, mode_id="yolo")
    await asyncio.sleep(0.2)
    assert client.kinds(sid).count("current_mode_update") == 3


async def test_the_editors_additional_folders_are_read_without_asking(
    plain: AcpAgent, tmp_path: Path
) -> None:
    client, server = plain.client, plain.server
    shared, other = tmp_path / "shared", tmp_path / "other"
    for folder in (shared, other):
        folder.mkdir()
        (folder / "notes.txt").write_text(f"notes of {folder.name}\n")
    given = [str(shared), "/", str(Path.home()), "relative/dir", str(tmp_path / "gone")]
    response = await plain.conn.new_session(
        cwd=str(plain.project), mcp_servers=[], additional_directories=given
    )
    sid = response.session_id
    client.answer = "reject"
    server.script(
        tool_call("read", {"path": str(shared / "notes.txt")}),
        tool_call("read", {"path": str(other / "notes.txt")}),
        tool_call("write", {"path": str(shared / "new.txt"), "content": "new\n"}),
        text("ok"),
    )
    assert (await plain.prompt(sid, "read them")).stop_reason == "end_turn"

    # The added folder is read at once; one not added, and any write, still ask (rejected).
    asked = [a.tool_call.title for a in client.asked if a.session_id == sid]
    assert asked == [f"read: {other / 'notes.txt'}", f"write: {shared / 'new.txt'}"]
    results = [m for m in server.requests[-1].messages if m["role"] == "tool"]
    assert "notes of shared" in str(results[0]["content"])
    assert "notes of other" not in str(results[1]["content"])
    assert not (shared / "new.txt").exists()
    # The model is told of the folder, the user of it and of every path refused.
    assert "Additional folders" in json.dumps(server.requests[-1].body)
    thread = client.text(sid)
    assert f"read without asking (a write there still asks): {shared}" in thread
    assert "/ is the filesystem's root" in thread
    assert f"{Path.home()} is the home folder or holds it" in thread
    assert "relative/dir is not an absolute path" in thread
    assert f"{tmp_path / 'gone'} is not a folder" in thread
    assert str(other) not in json.dumps(server.requests[-1].body["messages"][0])


async def test_loading_an_open_session_again_takes_the_folders_it_gives(
    plain: AcpAgent, tmp_path: Path
) -> None:
    """``session/load`` of a session already open (an editor window reopened, its roots
    changed): its additionalDirectories become the session's, as on ``session/new``, and
    ``session/list`` reports them. They were ignored: the folders of the first open stayed."""
    client, server = plain.client, plain.server
    first, then = tmp_path / "first", tmp_path / "then"
    for folder in (first, then):
        folder.mkdir()
        (folder / "notes.txt").write_text(f"notes of {folder.name}\n")
    response = await plain.conn.new_session(
        cwd=str(plain.project), mcp_servers=[], additional_directories=[str(first)]
    )
    sid = response.session_id
    await plain.conn.load_session(
        cwd=str(plain.project),
        session_id=sid,
        mcp_servers=[],
        additional_directories=[str(then), "relative/dir"],
    )
    client.answer = "reject"
    server.script(
        tool_call("read", {"path": str(then / "notes.txt")}),
        tool_call("read", {"path": str(first / "notes.txt")}),
        text("ok"),
    )
    assert (await plain.prompt(sid, "read them")).stop_reason == "end_turn"
    asked = [a.tool_call.title for a in client.asked if a.session_id == sid]
    assert asked == [f"read: {first / 'notes.txt'}"]  # the folder given now is read at once
    results = [m for m in server.requests[-1].messages if m["role"] == "tool"]
    assert "notes of then" in str(results[0]["content"])
    system = str(server.requests[-1].messages[0]["content"])
    assert str(then.resolve()) in system and str(first.resolve()) not in system
    assert f"read without asking (a write there still asks): {then.resolve()}" in client.text(sid)
    assert "relative/dir is not an absolute path; not added" in client.text(sid)
    listed = await plain.conn.list_sessions(cwd=str(plain.project))
    [info] = [i for i in listed.sessions if i.session_id == sid]
    assert info.additional_directories == [str(then.resolve())]

    # Loaded again with none: none, as the protocol says.
    await plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[])
    listed = await plain.conn.list_sessions(cwd=str(plain.project))
    [info] = [i for i in listed.sessions if i.session_id == sid]
    assert not info.additional_directories


async def test_slash_commands_are_offered_and_run(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    sid = await plain.new_session()
    await client.wait_for(lambda: "available_commands_update" in client.kinds(sid))
    offered = next(
        u for u in client.updates[sid] if u.session_update == "available_commands_update"
    )
    assert [c.name for c in offered.available_commands] == ["compact", "context"]

    requests = len(server.requests)
    assert (await plain.prompt(sid, "/context")).stop_reason == "end_turn"
    assert "agentsh: context " in client.text(sid) and "not compacted" in client.text(sid)
    assert len(server.requests) == requests  # answered by agentsh, not the model

    # Summarize keeps the last 5 turns: 6 make one to summarize.
    long = " ".join(["words"] * 300)
    server.script(*(text(f"Answer {n}: {long}") for n in range(6)), text("The summary."))
    for n in range(6):
        assert (await plain.prompt(sid, f"question {n}")).stop_reason == "end_turn"
    assert (await plain.prompt(sid, "/compact keep the numbers")).stop_reason == "end_turn"
    assert "context compacted" in client.text(sid)
    assert "keep the numbers" in json.dumps(server.requests[-1].body)


# -- session/load ---------------------------------------------------------------------------------


def _saved_session(agent: AcpAgent) -> Session:
    """A session written before this agent started (as after an editor restart)."""
    folder = UserPaths.from_env({"AGENTSH_HOME": str(agent.home)}).project_sessions_dir(
        agent.project
    )
    session = Session.create(folder, agent.project)
    session.append_message(Role.USER, "fix the greeting")
    call = ToolCall(
        id="call_1",
        name="edit",
        arguments=json.dumps({"path": "hello.py", "old_text": "helo", "new_text": "hello"}),
    )
    session.append_message(
        Role.ASSISTANT, "Fixing it.\n\n- [x] find it\n- [ ] fix it", tool_calls=(call,)
    )
    diff = "--- a/hello.py\n+++ b/hello.py\n@@ -1 +1 @@\n-print('helo')\n+print('hello')\n"
    session.append_tool_result("call_1", "edit", "Edited hello.py", details={"diff": diff})
    session.append_message(Role.ASSISTANT, "Done: it says hello now.")
    session.close()
    return session


async def test_load_replays_the_saved_branch_and_continues_it(plain: AcpAgent) -> None:
    client, server = plain.client, plain.server
    saved = _saved_session(plain)
    response = await plain.conn.load_session(
        cwd=str(plain.project), session_id=saved.id, mcp_servers=[]
    )
    assert response is not None and response.modes is not None
    sid = saved.id
    kinds = client.kinds(sid)
    assert kinds[0] == "available_commands_update"  # the slash commands first, then the replay
    kinds = kinds[1:]
    assert kinds[0] == "user_message_chunk"
    assert client.text(sid, "user_message_chunk") == "fix the greeting"
    assert "Fixing it." in client.text(sid) and "Done: it says hello now." in client.text(sid)
    assert "plan" in kinds
    (call,) = [u for u in client.updates[sid] if u.session_update == "tool_call"]
    assert call.status == "completed" and call.kind == "edit"
    assert call.locations[0].path == str(plain.project / "hello.py")
    assert call.locations[0].line == 1
    diff = next(c for c in call.content if c.type == "diff")
    assert (diff.old_text, diff.new_text) == ("print('helo')\n", "print('hello')\n")
    assert kinds[-1] == "usage_update"

    # The conversation goes on where it was.
    server.script(text("Still hello."))
    assert (await plain.prompt(sid, "and now?")).stop_reason == "end_turn"
    contents = [m["content"] for m in server.requests[-1].messages]
    assert "fix the greeting" in contents and "Done: it says hello now." in contents


async def test_load_of_an_unknown_id_starts_it_empty_with_a_note(plain: AcpAgent) -> None:
    sid = "0b1c2d3e-0000-4000-8000-000000000001"
    await plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[])
    assert "no saved conversation" in plain.client.text(sid)


# -- errors stay on the protocol ---------------------------------------------------------------


async def test_errors_are_json_rpc_errors(plain: AcpAgent) -> None:
    with pytest.raises(RequestError) as unknown:
        await plain.conn.prompt(session_id="nope", prompt=[text_block("hi")])
    assert unknown.value.code == -32002
    with pytest.raises(RequestError) as relative:
        await plain.conn.new_session(cwd="relative/path", mcp_servers=[])
    assert relative.value.code == -32602
    with pytest.raises(RequestError):
        await plain.conn.load_session(
            cwd=str(plain.project), session_id="../../etc", mcp_servers=[]
        )
    with pytest.raises(RequestError):
        await plain.conn.set_session_mode(session_id="nope", mode_id="all")

    # Garbage on stdin is skipped (logged on stderr), and the agent still answers.
    assert plain.process.stdin is not None
    plain.process.stdin.write(b"this is not json\n")
    await plain.process.stdin.drain()

    # A model error ends the turn with a JSON-RPC error; the thread says what happened.
    sid = await plain.new_session()
    plain.server.script(ErrorReply(401, "Incorrect API key provided"))
    with pytest.raises(RequestError) as failed:
        await plain.prompt(sid, "hello")
    assert failed.value.code == -32603
    assert "agentsh:" in str(failed.value)
    assert "key" in plain.client.text(sid).lower()
    # ... in one line, not the protocol package's traceback
    said = plain.stderr.read_text()
    [line] = [line for line in said.splitlines() if "this is not json" in line]
    assert "a line from the client was skipped: not JSON (Expecting value" in line
    assert "Traceback" not in said


# -- an editor's buffers and terminals ----------------------------------------------------------


async def test_edits_go_through_the_editor_buffer(editor: AcpAgent) -> None:
    client, server = editor.client, editor.server
    source = editor.project / "calc.py"
    source.write_text("a = 1\n")
    client.buffers[str(source)] = "a = 1\nb = 2\n"  # unsaved in the editor
    sid = await editor.new_session()
    await editor.conn.set_session_mode(session_id=sid, mode_id="edits")
    server.script(
        tool_call("read", {"path": "calc.py"}),
        tool_call("edit", {"path": "calc.py", "old_text": "b = 2", "new_text": "b = 3"}),
        text("Changed."),
    )
    assert (await editor.prompt(sid, "bump b")).stop_reason == "end_turn"
    # The read saw the unsaved line; the edit went to the editor, not to the disk.
    read_result = [m for m in server.requests[1].messages if m["role"] == "tool"][-1]
    assert "b = 2" in str(read_result["content"])
    assert client.writes == [(str(source), "a = 1\nb = 3\n")]
    assert source.read_text() == "a = 1\n"
    final = _finals(client, sid)[-1]
    diff = next(c for c in final.content if c.type == "diff")
    assert diff.path == str(source) and "b = 3" in diff.new_text
    assert final.locations[0].path == str(source) and final.locations[0].line == 2  # b = 3


async def test_writes_the_editor_must_not_see_stay_guarded(
    editor: AcpAgent, tmp_path: Path
) -> None:
    client, server = editor.client, editor.server
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (editor.project / "link.txt").symlink_to(outside)
    sid = await editor.new_session()
    await editor.conn.set_session_mode(session_id=sid, mode_id="all")
    client.answer = "reject"
    writes_before = len(client.writes)
    server.script(
        tool_call("write", {"path": "link.txt", "content": "pwned\n"}),
        tool_call("write", {"path": ".git/config", "content": "[core]\n"}),
        text("ok"),
    )
    assert (await editor.prompt(sid, "write")).stop_reason == "end_turn"
    # Both asked although the mode allows everything, and nothing reached the editor or disk.
    reasons = [_reason(a) for a in client.asked if a.session_id == sid]
    assert len(reasons) == 2
    assert "outside the project" in reasons[0] and ".git/" in reasons[1]
    assert len(client.writes) == writes_before
    assert outside.read_text() == "secret\n"
    # "Always" is not offered for either: agentsh would allow that one call only.
    for offered in [a.options for a in client.asked if a.session_id == sid]:
        assert "allow_always" not in {o.kind for o in offered}


async def test_commands_run_in_the_editor_terminal(editor: AcpAgent) -> None:
    client, server = editor.client, editor.server
    sid = await editor.new_session()
    await editor.conn.set_session_mode(session_id=sid, mode_id="all")
    server.script(tool_call("bash", {"command": "echo from-terminal; exit 3"}), text("ok"))
    assert (await editor.prompt(sid, "run")).stop_reason == "end_turn"
    (terminal_id,) = [t for t, term in client.terminals.items() if term.released]
    final = _finals(client, sid)[-1]
    assert final.status == "failed"  # exit code 3
    assert final.content[0].type == "terminal" and final.content[0].terminal_id == terminal_id
    result = [m for m in server.requests[-1].messages if m["role"] == "tool"][-1]
    assert "from-terminal" in str(result["content"]) and "code 3" in str(result["content"])


async def test_cancel_while_a_command_runs_in_the_editor_terminal(editor: AcpAgent) -> None:
    # An editor that never answers terminal/output for the killed command: the cancelled turn
    # must not wait for it (it waited forever). The cancel is sent once the command printed
    # (the editor wakes the test on output); the command cannot end by itself first.
    client, server = editor.client, editor.server
    sid = await editor.new_session()
    await editor.conn.set_session_mode(session_id=sid, mode_id="all")
    client.stall_output_after_kill = True
    server.script(tool_call("bash", {"command": "echo started; exec sleep 300"}), text("never"))
    known = set(client.terminals)
    turn = asyncio.ensure_future(editor.prompt(sid, "run it"))
    await client.wait_for(lambda: bool(set(client.terminals) - known))
    (terminal_id,) = set(client.terminals) - known
    await client.wait_for(lambda: b"started" in client.terminals[terminal_id].output)
    await editor.conn.cancel(session_id=sid)
    try:
        response = await asyncio.wait_for(turn, 30)  # bounded: it waited forever
    finally:
        client.stall_output_after_kill = False
    assert response.stop_reason == "cancelled"
    terminal = client.terminals[terminal_id]
    assert terminal.killed, "the agent did not kill the cancelled command"
    assert terminal.process.returncode is not None and terminal.released
    assert _finals(client, sid)[-1].status == "failed"
    assert server.pending == 1  # no model call after the cancel; the reply is dropped
    server.drop_pending()


# -- MCP servers the editor passes --------------------------------------------------------------


async def test_the_editors_mcp_servers_are_started_and_their_tools_offered(
    plain: AcpAgent,
) -> None:
    client, server = plain.client, plain.server
    fake = McpServerStdio(name="fake", command=sys.executable, args=[str(FAKE_MCP_SERVER)], env=[])
    bad = McpServerStdio(name="no spaces allowed", command="x", args=[], env=[])
    response = await plain.conn.new_session(cwd=str(plain.project), mcp_servers=[fake, bad])
    sid = response.session_id
    await plain.conn.set_session_mode(session_id=sid, mode_id="all")
    server.script(tool_call("mcp__fake__echo", {"text": "through the editor"}), text("ok"))
    before = len(server.requests)
    assert (await plain.prompt(sid, "echo it")).stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in server.requests[before].body.get("tools", [])]
    assert "mcp__fake__echo" in offered
    (final,) = _finals(client, sid)
    assert final.status == "completed"
    result = [m for m in server.requests[-1].messages if m["role"] == "tool"][-1]
    assert "through the editor" in str(result["content"])
    # The entry agentsh could not take is one warning in the thread, not a failed session.
    assert "no spaces allowed" in client.text(sid)


async def test_loading_an_open_session_with_other_mcp_servers_uses_those(
    plain: AcpAgent,
) -> None:
    """``session/load`` of a session already open with another MCP server list (the user
    changed the editor's context servers): the session runs the servers given now. The list
    of the first open was kept: a server removed in the editor was still called, an added one
    never started."""
    client, server = plain.client, plain.server
    script = [str(FAKE_MCP_SERVER)]
    first = McpServerStdio(name="first", command=sys.executable, args=script, env=[])
    second = McpServerStdio(name="second", command=sys.executable, args=script, env=[])
    sid = (await plain.conn.new_session(cwd=str(plain.project), mcp_servers=[first])).session_id
    await plain.conn.set_session_mode(session_id=sid, mode_id="all")
    server.script(text("one"))
    before = len(server.requests)
    assert (await plain.prompt(sid, "hello")).stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in server.requests[before].body.get("tools", [])]
    assert "mcp__first__echo" in offered

    await plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[second])
    server.script(tool_call("mcp__second__echo", {"text": "from the second"}), text("two"))
    before = len(server.requests)
    assert (await plain.prompt(sid, "echo it")).stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in server.requests[before].body.get("tools", [])]
    assert "mcp__second__echo" in offered and "mcp__first__echo" not in offered
    result = [m for m in server.requests[-1].messages if m["role"] == "tool"][-1]
    assert "from the second" in str(result["content"])  # run without asking: the mode held
    assert not [a for a in client.asked if a.session_id == sid]
    assert "MCP servers are now second (were first)" in client.text(sid)
    # The conversation went on in the same log.
    assert any("hello" in str(m["content"]) for m in server.requests[-1].messages)

    await plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[])
    server.script(text("three"))
    before = len(server.requests)
    assert (await plain.prompt(sid, "and now")).stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in server.requests[before].body.get("tools", [])]
    assert not [name for name in offered if name.startswith("mcp__")]


async def test_two_loads_at_once_with_other_mcp_servers_leave_one_working_session(
    plain: AcpAgent,
) -> None:
    """Two ``session/load`` s of one open session, each with another server list, sent
    together (a window reopened twice): each reopens it in turn; the last one's servers are
    the session's. Run side by side, the second could drop the first one's reopened agent
    unclosed, its log still locked, and fail, leaving no open session."""
    server = plain.server
    script = [str(FAKE_MCP_SERVER)]
    first = McpServerStdio(name="first", command=sys.executable, args=script, env=[])
    second = McpServerStdio(name="second", command=sys.executable, args=script, env=[])
    sid = (await plain.conn.new_session(cwd=str(plain.project), mcp_servers=[])).session_id
    server.script(text("one"))
    assert (await plain.prompt(sid, "hello")).stop_reason == "end_turn"

    await asyncio.gather(
        plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[first]),
        plain.conn.load_session(cwd=str(plain.project), session_id=sid, mcp_servers=[second]),
    )
    server.script(text("two"))
    before = len(server.requests)
    assert (await plain.prompt(sid, "and now")).stop_reason == "end_turn"
    offered = [t["function"]["name"] for t in server.requests[before].body.get("tools", [])]
    assert "mcp__second__echo" in offered and "mcp__first__echo" not in offered


async def test_close_lets_the_session_go_and_resume_goes_on_without_a_replay(
    plain: AcpAgent, tmp_path: Path
) -> None:
    """``session/close`` and ``session/resume`` (advertised): a closed session's log is
    let go (the TUI can resume it at once) and its MCP servers stopped; a resume continues
    the conversation without replaying it. Both were "method not found": a thread closed in
    the editor kept its log locked and its servers running until the agent exited."""
    assert plain.initialized.agent_capabilities is not None
    caps = plain.initialized.agent_capabilities.session_capabilities
    assert caps is not None and caps.close is not None and caps.resume is not None
    client, server = plain.client, plain.server
    pids = tmp_path / "pids"
    fake = McpServerStdio(
        name="fake",
        command=sys.executable,
        args=[str(FAKE_MCP_SERVER), "--pid-dir", str(pids)],
        env=[],
    )
    sid = (await plain.conn.new_session(cwd=str(plain.project), mcp_servers=[fake])).session_id
    server.script(text("noted: banana"))
    assert (await plain.prompt(sid, "remember banana")).stop_reason == "end_turn"
    assert list(pids.glob("server-*"))

    await plain.conn.close_session(session_id=sid)
    path = next((plain.home / "data" / "sessions").rglob(f"*_{sid}.jsonl"))
    Session.open(path).close()  # the lock is free: another agentsh can take the session
    servers = [int(f.name.split("-")[1]) for f in pids.glob("server-*")]
    assert await asyncio.to_thread(wait_gone, servers) == [], "its MCP server outlived it"
    with pytest.raises(RequestError):  # closed: no prompt goes to it any more
        await plain.prompt(sid, "still there?")

    updates_before = len(client.updates[sid])
    resumed = await plain.conn.resume_session(cwd=str(plain.project), session_id=sid)
    assert resumed.modes is not None
    replayed = [
        u
        for u in client.updates[sid][updates_before:]
        if u.session_update in ("user_message_chunk", "agent_message_chunk")
    ]
    assert replayed == []  # the client kept the thread
    server.script(text("banana it was"))
    assert (await plain.prompt(sid, "what was it?")).stop_reason == "end_turn"
    assert "remember banana" in json.dumps(server.requests[-1].messages)


async def test_loading_a_session_another_agentsh_holds_says_what_to_do(plain: AcpAgent) -> None:
    """The conversation is open in the TUI (its log locked): the editor was told to "pass
    --fork", an option it has no way to give."""
    saved = _saved_session(plain)
    assert saved.path is not None
    held = Session.open(saved.path)  # as a TUI in a terminal holds it
    try:
        with pytest.raises(RequestError) as refused:
            await plain.conn.load_session(
                cwd=str(plain.project), session_id=saved.id, mcp_servers=[]
            )
    finally:
        held.close()
    message = str(refused.value.data or "") + str(refused.value)
    assert "open in another agentsh" in message and "close it there" in message
    assert "--fork" not in message
