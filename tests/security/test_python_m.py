"""``python -m agentsh`` in a cloned repository does not import the repository's modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_module_in_the_folder_does_not_shadow_the_real_one(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentsh", "sessions", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert not marker.exists(), done.stderr
    assert done.returncode == 0, done.stderr
