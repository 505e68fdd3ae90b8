"""The first frame must not wait for heavy libraries: importing the TUI stays light."""

from __future__ import annotations

import json
import subprocess
import sys

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
