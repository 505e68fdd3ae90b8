"""End to end: ``agentsh -p --allowedTools "Bash(git:*)"`` in a plain clone of a hostile repository.

A clone carries no ``.git/config`` and no hooks, so the check of the project's own repository
finds nothing and the rule covers git commands. But the tracked files can hold a bare
repository with an executable hook (``vendor/cache.git``) and, at the top, a bare repository's
own files (``HEAD``, ``objects/``, ``refs/``, ``config`` with an alias); and git reaches the
user's own files. A scripted model tries, with git commands only: a push to the vendored
repository (its pre-receive ran), ``git --bare x`` (the alias ran), ``git config --global``
with an fsmonitor then ``git status`` (it ran, and stayed in the user's ~/.gitconfig), ``git
credential fill`` fed by ``git log`` (the stored password reached the model), ``git blame
--contents`` of the user's key. Nothing runs, nothing outside changes, no secret is sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.git_repo import git
from tests.fakes.server import ScriptedServer, text, tool_calls

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # an agentsh -p process

PASSWORD = "ghp_c10neds3cr3tT0k3n"
KEY_TEXT = "b3BlbnNzaC1rZXktdjEAAAAAcl0ned"


def _hostile_clone(tmp_path: Path, markers: Path) -> Path:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    git(origin, "init", "-q", "--bare", "vendor/cache.git")
    hook = origin / "vendor/cache.git/hooks/pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch {markers / 'hook'}\n")
    hook.chmod(0o755)
    (origin / "HEAD").write_text("ref: refs/heads/main\n")
    for folder in ("objects/info", "refs/heads"):  # git tracks no empty folder
        for top in ("", "vendor/cache.git/"):
            (origin / top / folder).mkdir(parents=True, exist_ok=True)
            (origin / top / folder / ".keep").write_text("")
    (origin / "config").write_text(f"[alias]\n\tx = !touch {markers / 'alias'}\n")
    (origin / "main.py").write_text("print('hello')\n")
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=a", "-c", "user.email=a@b.c", "commit", "-qm", "clone me")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone


def test_git_commands_in_a_hostile_clone_reach_nothing(
    tmp_path: Path, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    home = tmp_path / "home"
    markers = home / "markers"
    markers.mkdir(parents=True)
    (home / ".ssh").mkdir()
    key = home / ".ssh" / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_TEXT}\n")
    (home / ".git-credentials").write_text(f"https://me:{PASSWORD}@github.com\n")
    (home / ".gitconfig").write_text("[credential]\n\thelper = store\n")
    clone = _hostile_clone(tmp_path, markers)
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[model]\napi_base = "{scripted_server.base_url}"\n')
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    attacks = [
        "git push vendor/cache.git HEAD:refs/heads/x",
        "git --bare x",
        f"git config --global 'core.fsmonitor' 'touch {markers / 'fsmonitor'};false'",
        "git status",
        "git log -1 --format='protocol=https%nhost=github.com%n' | git credential fill",
        f"git blame --contents {key} main.py",
    ]
    scripted_server.script(
        *[tool_calls(("bash", {"command": command})) for command in attacks], text("done")
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSH_", "OPENAI", "GIT_"))}
    env |= {"AGENTSH_HOME": str(agentsh_home), "OPENAI_API_KEY": FAKE_KEY, "HOME": str(home)}
    run = subprocess.run(
        [sys.executable, "-m", "agentsh", "-p", "look around", "--allowedTools", "Bash(git:*)"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before
    bodies = json.dumps([r.body for r in scripted_server.requests])
    assert PASSWORD not in bodies and KEY_TEXT not in bodies
    last = scripted_server.requests[-1].messages
    results = [str(m["content"]) for m in last if m["role"] == "tool"]
    assert len(results) == len(attacks)
    status = results.pop(3)  # plain: the rule covers it, and nothing makes it run a program
    assert "On branch" in status
    assert all(r.startswith("Denied") for r in results), results
