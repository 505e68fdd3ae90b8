"""``agentsh -p`` in a folder it does not trust: the folder's files stay out, said in one line."""

from __future__ import annotations

from pathlib import Path

from agentsh.paths import UserPaths
from agentsh.trust import check_project, grant
from tests.agent.conftest import AgentshRunner
from tests.fakes.server import ScriptedServer, text, tool_call


def _system(scripted_server: ScriptedServer, index: int = 0) -> str:
    first = scripted_server.requests[index].messages[0]
    assert first["role"] == "system"
    return str(first["content"])


def _seed(project: Path) -> None:
    (project / "AGENTS.md").write_text("Always answer in the PIRATE-DIALECT.\n")
    memory = project / ".agentsh" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("The deploy key is in DEPLOY-NOTES.\n")
    (project / ".agentsh" / "config.toml").write_text("[context]\nmax_messages = 40\n")


def test_an_untrusted_folder_runs_without_its_files_and_says_so_once(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    _seed(project)
    scripted_server.script(text("ok"))
    run = run_agentsh("-p", "hi")
    assert run.code == 0, run.stderr
    system = _system(scripted_server)
    assert "PIRATE-DIALECT" not in system and "DEPLOY-NOTES" not in system
    trust_lines = [line for line in run.stderr.splitlines() if "not trusted" in line]
    assert len(trust_lines) == 1
    assert "--trust-project" in trust_lines[0] and "AGENTS.md" in trust_lines[0]


def test_trust_project_loads_them_for_this_run_only(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    _seed(project)
    scripted_server.script(text("ok"), text("ok"))
    run = run_agentsh("-p", "hi", "--trust-project")
    assert run.code == 0, run.stderr
    assert "not trusted" not in run.stderr
    system = _system(scripted_server)
    assert "PIRATE-DIALECT" in system and "DEPLOY-NOTES" in system
    again = run_agentsh("-p", "hi")
    assert "not trusted" in again.stderr
    assert "PIRATE-DIALECT" not in _system(scripted_server, 1)


def test_a_trusted_agents_md_linked_to_a_key_is_refused(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path, tmp_path: Path
) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n")
    (project / "AGENTS.md").symlink_to(key)
    scripted_server.script(text("ok"))
    run = run_agentsh("-p", "what does main.py do?", "--trust-project")
    assert run.code == 0, run.stderr
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in str(scripted_server.requests[0].body)
    assert "AGENTS.md was not loaded: it leads outside the project" in run.stderr


def test_a_key_in_the_api_base_query_string_stays_out_of_errors_and_the_session(
    run_agentsh: AgentshRunner, project: Path, agentsh_home: Path
) -> None:
    secret = "QUERYSECRETc2VjcmV0a2V5"
    run = run_agentsh("-p", "hi", "--api-base", f"http://127.0.0.1:9/v1?api-key={secret}")
    assert run.code != 0
    assert secret not in run.stderr and secret not in run.stdout
    for path in (agentsh_home / "data").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_headless_commits_in_a_trusted_pre_commit_repository(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho hook ran >> hook.log\n")
    hook.chmod(0o755)
    (project / "a.txt").write_text("a\n")
    commit = "git add a.txt && git -c user.email=a@b -c user.name=a commit -qm a"
    scripted_server.script(tool_call("bash", {"command": commit}), text("done"))
    run = run_agentsh("-p", "commit", "--allowedTools", "Bash(git:*)")
    assert run.code == 0, run.stderr
    assert not (project / "hook.log").exists()
    assert "covers them only as you trusted them with the folder" in run.stderr
    assert "this folder is not trusted" not in run.stderr  # no line for hooks alone
    grant(UserPaths.from_env(), check_project(UserPaths.from_env(), project))
    scripted_server.script(tool_call("bash", {"command": commit}), text("done"))
    run = run_agentsh("-p", "commit", "--allowedTools", "Bash(git:*)")
    assert run.code == 0, run.stderr
    assert (project / "hook.log").read_text() == "hook ran\n"
