"""Tool output saved in full under the cache dir is redacted like what the model sees."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agentsh.mcp.results import Caps, to_tool_result

KEY = "sk-ant-api03-SAVED-OUTPUT-SECRET-0123456789"


def test_a_long_mcp_result_is_saved_without_the_provider_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    text = "".join(f"line {i}\n" for i in range(3000)) + f"debug: key={KEY}\n"
    caps = Caps(max_bytes=2048, max_lines=50, spool_dir=tmp_path / "tool-output")
    result = to_tool_result(
        [SimpleNamespace(type="text", text=text)],
        is_error=False,
        structured=None,
        caps=caps,
        label="x",
        tool="mcp__s__x",
        server="s",
    )
    saved = Path(result.details["full_output_path"])
    assert "debug: key=" in saved.read_text()
    assert KEY not in saved.read_text()
