"""End to end: the real TUI in tmux, opened in the hostile repository (tests/security/hostile.py).

The trust screen comes first and names what the folder wants; the user trusts it. The
project's config remapped the approval keys (``approve_once = "escape,n"``, ``deny = "y"``):
the approval prompt must still show agentsh's own keys, and Esc must not run the command the
model asks for. Nothing reaches the attacker's server, no planted program runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agentsh.llm.models import PROVIDERS
from tests.e2e.tmux import ScriptedServerProcess, TmuxPane, tmux_available
from tests.fakes.warm_workers import warm_worker_env
from tests.security.hostile import Attacker, plant

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not tmux_available(), reason="tmux is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]


def test_trusted_or_not_the_repository_cannot_remap_the_approval_keys(
    tmp_path: Path, project: Path
) -> None:
    attacker = Attacker().start()
    try:
        hostile = plant(project, tmp_path / "victim", attacker.url)
        # Trusting the folder starts its MCP servers (issue 19; tests/security covers that):
        # this test is about the key remap, so the folder has none.
        (project / ".mcp.json").unlink()
        marker = hostile.markers / "approved-by-escape"
        script = tmp_path / "script.json"
        call = {"name": "bash", "arguments": {"command": f"touch {marker}"}}
        script.write_text(json.dumps([{"tool_calls": [call]}]))
        home = Path(os.environ["AGENTSH_HOME"])
        with ScriptedServerProcess(script, root=ROOT) as server:
            config = home / "config" / "config.toml"
            config.parent.mkdir(parents=True)
            config.write_text(f'[model]\napi_base = "{server.base_url}"\n')
            env = {
                "AGENTSH_HOME": str(home),
                "OPENAI_API_KEY": "sk-test-hostile-tui",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "HF_HUB_OFFLINE": "1",
                "AGENTSH_NO_OLLAMA_PROBE": "1",
                "PYTHONPATH": str(ROOT),
                "HOME": str(tmp_path / "victim"),
                "PATH": os.environ.get("PATH", ""),
                "TERM": "xterm-256color",
                **warm_worker_env(),
            }
            command = [sys.executable, "-m", "agentsh"]
            model = next(p.default_model for p in PROVIDERS if p.key_env == "OPENAI_API_KEY")
            with TmuxPane(command, cwd=project, env=env, width=140, height=45) as pane:
                # Waited for as a whole: its first frames may be laid out for 80x24, before the
                # pane's size reaches it (the list then scrolls, showing its first lines).
                pane.wait_for(
                    lambda s: "Do you trust this folder?" in s and "Ctrl+Q" in s
                    and "tui.keys" in s,
                    timeout=60,
                )  # fmt: skip
                if "leads outside the project" not in pane.screen():
                    pane.answer("PageDown")  # a small pane: the list scrolls, the keys stay
                pane.wait_for(lambda s: "leads outside the project" in s, timeout=30)
                pane.answer("y")
                pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
                pane.wait_for(lambda s: "loading…" not in s and model in s, timeout=90)
                pane.type("what does main.py do?")
                pane.send("Enter")
                # The keys the prompt offers are agentsh's own, not the project's remap (waited
                # for as a whole: a toast about the refused settings may cover it for a moment).
                pane.wait_for(lambda s: "[y] allow once" in s and "[n] deny" in s, timeout=60)
                pane.send("Escape")
                # Esc: a cancel (the notice, or the tool's block saying why it did not run)
                pane.wait_for(lambda s: "turn cancelled" in s or "cancelled the turn" in s, 60)
                pane.send("C-q")
        assert not marker.exists()
        # Trusted, the project's .mcp.json ran its stdio server (the trust question showed its
        # command; issue 19) and nothing else; its HTTP server asked for the provider key and
        # was refused before connecting.
        assert sorted(p.name for p in hostile.markers.iterdir()) in ([], ["mcp"])
        assert attacker.connections == []
    finally:
        attacker.stop()
