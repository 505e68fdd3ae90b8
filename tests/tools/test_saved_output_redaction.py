"""The full bash output saved under the cache dir holds no provider key, split or whole."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agentsh.tools.base import ToolContext
from agentsh.tools.shell import BashTool
from tests.tools.conftest import MakeCtx, call

KEY = "sk-live-Q29ycmVjdEhvcnNlQmF0dGVyeVN0YXBsZQ"


def _read(path: Path) -> str:
    return path.read_text()


@pytest.mark.asyncio
async def test_the_spooled_output_is_redacted(make_ctx: MakeCtx) -> None:
    ctx: ToolContext = dataclasses.replace(make_ctx(bash_max_bytes=1024), secrets=(KEY,))
    # Many lines, the key among them many times, written in pieces so it crosses pipe reads.
    script = (
        "for i in $(seq 1 400); do printf 'line %s ' $i; printf '%s' '" + KEY[:10] + "'; "
        "printf '%s\\n' '" + KEY[10:] + "'; done"
    )
    result = await call(BashTool(), ctx, command=script)
    text = _read(Path(result.details["full_output_path"]))
    assert KEY not in text and KEY[10:] not in text
    assert text.count("[redacted]") == 400
    assert "line 400 [redacted]" in text
