"""``agentsh acp`` against clients that misbehave: lines that are no JSON-RPC message, and an
editor that never answers a request for its buffers. One agent serves the module (the ``acp``
package's client side, the scripted model server); whatever a test sends, the agent stays up
and every line it wrote on stdout is a JSON-RPC frame.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from acp.schema import ReadTextFileResponse, WriteTextFileResponse

from agentsh.session.entries import ToolResultEntry
from agentsh.session.session import Session
from tests.acp.conftest import AcpAgent, EditorClient, spawn_acp
from tests.fakes.server import text, tool_call

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


class SilentEditor(EditorClient):
    """An editor that offers its buffers and never answers a read or a write of them."""

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        await self._changed()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        await self._changed()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AcpAgent]:
    root = tmp_path_factory.mktemp("acp-robust")
    config = "[acp]\neditor_timeout_s = 2\n"
    async with spawn_acp(root, SilentEditor(files=True), "--approve", "all", config=config) as a:
        yield a
    a.frames()  # every line on stdout was a JSON-RPC frame


async def _send_raw(agent: AcpAgent, data: bytes) -> None:
    assert agent.process.stdin is not None
    agent.process.stdin.write(data)
    await agent.process.stdin.drain()


def _answers_to_garbage(agent: AcpAgent) -> list[dict[str, Any]]:
    return [f for f in agent.frames() if "error" in f and "method" not in f]


async def test_lines_that_are_no_message_are_answered_as_json_rpc_says(agent: AcpAgent) -> None:
    """A JSON value that is no JSON-RPC object ended the agent with a traceback (the package
    called .get on it); a line that was not JSON got no answer."""
    bad = [
        b"[1, 2]\n",  # a batch
        b"5\n",
        b'"just a string"\n',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "result": 1}\n',  # a response nobody can match
        b'{"jsonrpc": "2.0", "id": [7], "method": "session/list"}\n',
        b'{"jsonrpc": "2.0", "id": 41, "method": 5}\n',
        b"\xff\xfe not even text\n",
        b"{ half a message\n",
    ]
    for line in bad:
        await _send_raw(agent, line)
    await _send_raw(agent, b'{"jsonrpc": "2.0", "id": 42, "method": "no/such_method"}\n')
    for _ in range(200):
        if any(f.get("id") == 42 for f in agent.frames()):
            break
        await asyncio.sleep(0.05)
    assert agent.process.returncode is None, agent.stderr.read_text()[-2000:]
    errors = {(f["id"], f["error"]["code"]) for f in _answers_to_garbage(agent)}
    assert (42, -32601) in errors  # and what came before it was answered in order:
    codes = [f["error"]["code"] for f in _answers_to_garbage(agent) if f["id"] is None]
    assert codes == [-32600, -32600, -32600, -32600, -32700, -32700]
    assert (41, -32600) in errors
    # The agent still works: a session, a turn.
    sid = await agent.new_session()
    agent.server.script(text("still here"))
    assert (await agent.prompt(sid, "hello")).stop_reason == "end_turn"
    said = agent.stderr.read_text()
    assert "Traceback" not in said
    assert said.count("a line from the client was skipped") == len(bad)


async def test_an_editor_that_never_answers_a_read_cannot_hold_the_turn(agent: AcpAgent) -> None:
    """The read waited for the editor for good, and session/cancel could not end the turn:
    the session was stuck ("still working on the previous prompt") until the editor quit."""
    client = agent.client
    (agent.project / "notes.txt").write_text("local copy\n")
    sid = await agent.new_session()
    agent.server.script(tool_call("read", {"path": "notes.txt"}), text("never read"))
    turn = asyncio.ensure_future(agent.prompt(sid, "read the notes"))
    await client.wait_for(lambda: len(client.reads) == 1)
    await agent.conn.cancel(session_id=sid)
    response = await asyncio.wait_for(turn, 10)
    assert response.stop_reason == "cancelled"
    (final,) = [u for u in client.tool_updates(sid) if getattr(u, "status", "") == "failed"]
    assert "cancelled before the editor answered" in json.dumps(final.raw_output)
    agent.server.drop_pending()

    # The session takes the next prompt, and a write the editor never answers fails on its
    # own after acp.editor_timeout_s (2 s here) rather than holding the turn.
    agent.server.script(tool_call("write", {"path": "new.txt", "content": "x"}), text("noted"))
    response = await asyncio.wait_for(agent.prompt(sid, "write it"), 30)
    assert response.stop_reason == "end_turn"
    assert client.writes and client.writes[-1][1] == "x"
    tool_messages = [m for m in agent.server.requests[-1].messages if m["role"] == "tool"]
    said = str(tool_messages[-1]["content"])
    assert "the editor did not answer within 2 s; it may still save it" in said
    assert not (agent.project / "new.txt").exists()  # not written behind the editor's back


async def test_an_editor_leaving_mid_command_ends_the_turn_as_a_cancel_does(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """End of input tore the turn down from outside: the command was killed but its result
    in the log said "not run", so a session/load (or the TUI) had the model run it again."""
    root = tmp_path_factory.mktemp("acp-leaving")
    client = EditorClient()
    async with spawn_acp(root, client, "--approve", "all") as leaving:
        sid = await leaving.new_session()
        leaving.server.script(
            tool_call("bash", {"command": "echo half-done; sleep 60"}), text("never")
        )
        turn = asyncio.ensure_future(leaving.prompt(sid, "start it"))

        def printed() -> bool:  # in the command's output, not in its start (which shows it)
            updates = client.tool_updates(sid)
            return "half-done" in str(
                [u.content for u in updates if u.session_update != "tool_call"]
            )

        await client.wait_for(printed)
        assert leaving.process.stdin is not None
        leaving.process.stdin.close()  # the editor quits
        await asyncio.wait_for(leaving.process.wait(), 10)
        turn.cancel()
    log = next((leaving.home / "data" / "sessions").rglob(f"*_{sid}.jsonl"))
    session = Session.open(log, lock=False)
    (result,) = [e for e in session.current_path() if isinstance(e, ToolResultEntry)]
    assert "half-done" in result.content and "not run" not in result.content
    leaving.frames()
