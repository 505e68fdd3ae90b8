"""The first frame must not wait for heavy libraries: importing the TUI stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("litellm", "tiktoken", "numpy", "onnxruntime", "tokenizers", "openai")


def _modules_after_import(module: str) -> set[str]:
    code = (
        f"import sys, json; import {module}; "
        "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_tui_app_does_not_import_heavy_libraries() -> None:
    loaded = _modules_after_import("agentsh.tui.app")
    assert "textual" in loaded
    assert not loaded & set(HEAVY), f"heavy modules on the first-frame path: {loaded & set(HEAVY)}"


def test_the_slash_command_table_waits_for_the_first_frame() -> None:
    # Its handlers and what they import (MCP results, model failures, file commands) are not
    # needed to draw: the App loads the table once the first frame is up.
    code = (
        "import sys; import agentsh.tui.app; "
        "print(sorted(m for m in sys.modules if m.startswith('agentsh.tui.slash.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "['agentsh.tui.slash.command']"


def test_importing_the_launcher_does_not_import_heavy_libraries() -> None:
    loaded = _modules_after_import("agentsh.tui.launch")
    assert not loaded & set(HEAVY)


MCP_SDK = ("mcp", "mcp_types", "anyio", "httpx2", "jsonschema", "pydantic")


def test_the_mcp_sdk_stays_off_the_first_frame_and_the_agent_module() -> None:
    # The SDK costs seconds to import: it loads on the MCP thread when a server starts, never
    # with the TUI, and not with the agent module either (built when no server is configured).
    for module in ("agentsh.tui.app", "agentsh.tui.launch", "agentsh.agent_assembly"):
        loaded = _modules_after_import(module)
        assert not loaded & set(MCP_SDK), f"{module} imports {loaded & set(MCP_SDK)}"


# What the first frame does not draw with, and so must not import: the model client and its
# urllib (the agent is built in the load thread, which imports them), Markdown rendering (the
# chat is empty until the session loads), the approval layer with its rules, and the MCP
# server parser (the trust check needs it only for a project that defines servers). All were
# imported before the first frame once: 610 modules then, under 500 since (issue 16).
NOT_BEFORE_FIRST_FRAME = (
    "agentsh.llm.remote",
    "agentsh.llm.client",
    "agentsh.llm.models",
    "urllib.request",
    "markdown_it",
    "textual.widgets._markdown",
    "agentsh.tools.approval",
    "agentsh.tools.base",
    "agentsh.mcp.servers_config",
)

_FIRST_FRAME = """
import json, sys
from agentsh.tui import app as app_mod

out = sys.argv[1]
slash = app_mod._slash


def first_frame():  # the first callback after the first refresh (AgentshApp.on_mount)
    if not getattr(first_frame, "seen", False):
        first_frame.seen = True
        text = sys.modules.get("agentsh.text")
        lazy = getattr(text, "_cjk", None)  # None: compiled at import
        compiled = lazy.cache_info().currsize if lazy else int(text is not None)
        with open(out, "w") as f:
            json.dump({"modules": sorted(sys.modules), "cjk_compiled": compiled}, f)
    return slash()


def exit_at_once(self):  # instead of starting the load thread
    self.exit()


real_run = app_mod.AgentshApp.run


def run_headless(self, **_given):
    return real_run(self, headless=True, size=(120, 40))


app_mod._slash = first_frame
app_mod.AgentshApp._after_first_frame = exit_at_once
app_mod.AgentshApp.run = run_headless
from agentsh.cli import main

sys.exit(main([]))
"""


def test_the_first_frame_does_not_wait_for_the_model_client_markdown_or_approvals(
    tmp_path: Path,
) -> None:
    """``agentsh`` in a folder, through the command line in a terminal (a pty), run to its
    first frame (drawn headless): what had been imported by then."""
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "AGENTSH_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    env["AGENTSH_NO_OLLAMA_PROBE"] = "1"
    out = tmp_path / "first-frame.json"
    leader, follower = os.openpty()  # the command line starts the TUI only in a terminal
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_FRAME, str(out)],
            stdin=follower,
            stdout=follower,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=project,
            env=env,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    loaded = set(result["modules"])
    assert {"agentsh.cli", "agentsh.tui.app", "agentsh.mcp.server_trust"} <= loaded  # it ran
    early = sorted(loaded & set(NOT_BEFORE_FIRST_FRAME))
    assert not early, f"imported before the first frame: {early}"
    assert "agentsh.text" in loaded
    assert result["cjk_compiled"] == 0  # agentsh.text's pattern: 8-18 ms, compiled at first use
