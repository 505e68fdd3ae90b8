"""Render docs/screenshot.svg: a short conversation with tool calls, through Textual's own
screenshot. ``python -m tests.tui.screenshot [OUT.svg]``. Uses a stand-in agent and a session
kept in memory, so nothing on disk or on screen depends on the machine."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from agentsh.events import ContextStatus, Tier
from agentsh.session.entries import Role, StopReason, ToolCall
from agentsh.session.session import Session

DIFF = """--- a/src/parse.py
+++ b/src/parse.py
@@ -12,7 +12,7 @@ def parse_entry(raw: dict) -> Entry:
     kind = raw["type"]
-    name = raw["name"]
+    name = raw.get("name", "")
     return Entry(kind, name)"""


def conversation(cwd: Path) -> Session:
    s = Session.create(None, cwd)
    s.append_message(Role.USER, "`test_parse` fails on entries without a name. Fix it.")
    run = ToolCall("c1", "bash", json.dumps({"command": "pytest -q tests/test_parse.py"}))
    s.append_message(Role.ASSISTANT, "Let me reproduce it first.", tool_calls=(run,),
                     stop_reason=StopReason.TOOL_CALLS)  # fmt: skip
    s.append_tool_result(
        "c1", "bash",
        ".F.\nFAILED tests/test_parse.py::test_unnamed - KeyError: 'name'\n"
        "1 failed, 2 passed in 0.04s\nCommand exited with code 1",
        is_error=True,
    )  # fmt: skip
    edit = ToolCall("c2", "edit", json.dumps({"path": "src/parse.py"}))
    s.append_message(Role.ASSISTANT, "", tool_calls=(edit,), stop_reason=StopReason.TOOL_CALLS)
    s.append_tool_result("c2", "edit", "Edited src/parse.py", details={"diff": DIFF})
    s.append_message(
        Role.ASSISTANT,
        "Fixed: `parse_entry` now treats a missing **name** as empty.\n\n"
        '- `src/parse.py`: `raw.get("name", "")`\n- all 3 tests pass',
        stop_reason=StopReason.STOP,
    )
    return s


async def render() -> str:
    os.environ.setdefault("AGENTSH_HOME", tempfile.mkdtemp())
    from agentsh.config import load_environment
    from agentsh.tui.app import AgentshApp
    from agentsh.tui.options import LaunchOptions
    from agentsh.tui.widgets.composer import PromptInput
    from tests.tui.conftest import ready
    from tests.tui.fake_agent import FakeAgent

    project = Path(tempfile.mkdtemp())
    status = ContextStatus(
        model="anthropic/claude-sonnet-4-6", window=200_000, used=164_000, pct=82.0,
        tier=Tier.MOVE_TO_WORKSPACE, session_input_tokens=412_000, session_output_tokens=9_800,
        session_cost=1.37, compactions=1, branch_index=2, branch_count=2,
    )  # fmt: skip
    app = AgentshApp(
        load_environment(project),
        LaunchOptions(no_session=True),
        agent_factory=lambda _e, s, _o: FakeAgent(s, model=status.model, status=status),
        cwd=project,
        watch_themes=False,
    )
    async with app.run_test(size=(100, 34)) as pilot:
        await ready(pilot, app)
        await app.controller.switch_session(conversation(project))
        app.query_one(PromptInput).cursor_blink = False
        await pilot.pause(0.3)
        return app.export_screenshot(title="agentsh")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot.svg")
    target.write_text(asyncio.run(render()))
    print(f"wrote {target}")
