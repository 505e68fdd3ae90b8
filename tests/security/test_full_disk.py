"""``write`` and ``edit`` on a disk that fills up mid-write: the kernel's own refusal, no mock.

``agentsh -p`` runs with ``RLIMIT_FSIZE`` below the size of the file it edits (and SIGXFSZ
ignored), so the temporary copy's write stops part way exactly as on a full disk. The old
file must stay whole, no temporary file may be left, and the model is told the write failed.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # agentsh -p runs, on a busy machine

LINES = "".join(f"line {i} of a file that is long enough to matter\n" for i in range(4000))


def test_an_edit_on_a_full_disk_leaves_the_file_whole(
    project: Path, agentsh_home: Path, scripted_server: ScriptedServer
) -> None:
    # (write goes through the same atomic write; its content would be in the session line,
    # which the limit stops first.)
    call = ("edit", {"path": "big.txt", "old_text": "line 3999 of", "new_text": "LAST line of"})
    (project / "big.txt").write_text(LINES)
    (project / "big.txt").chmod(0o640)
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[checkpoints]\nenabled = false\n")  # its store would hit the limit first
    scripted_server.script(tool_calls(call), text("done"))
    limit = len(LINES) // 2

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = subprocess.run(
        [
            *(sys.executable, "-m", "agentsh", "-m", TEST_MODEL),
            *("--api-base", scripted_server.base_url, "-p", "change big.txt", "--approve", "edits"),
        ],
        cwd=project,
        env={**os.environ, "OPENAI_API_KEY": FAKE_KEY},
        capture_output=True,
        text=True,
        preexec_fn=small_disk,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert (project / "big.txt").read_text() == LINES
    assert (project / "big.txt").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in project.iterdir()) == [".git", "big.txt"]  # no temp file
    [result] = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert "File too large" in str(result["content"])
