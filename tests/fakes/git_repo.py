"""A git repository as a test needs it: git run quietly in it, and hooks planted in it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(root: Path, *args: str) -> None:
    """Run ``git args`` in ``root``; a failure fails the test."""
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def plant_hook(
    root: Path, name: str = "pre-commit", body: str = "exit 0", *, executable: bool = True
) -> Path:
    """A ``.git/hooks/<name>`` shell script running ``body`` (a non-executable one never runs)."""
    hook = root / ".git" / "hooks" / name
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755 if executable else 0o644)
    return hook
