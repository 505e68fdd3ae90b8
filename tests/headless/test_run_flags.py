"""Claude Code's run-shaping flags with ``-p`` (agentsh.run_options): --dangerously-skip-
permissions, --add-dir, --mcp-config / --strict-mcp-config, --settings and --fallback-model,
each run through the command line in this process against the scripted model server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import AgentshRunner, Run
from tests.fakes.server import ErrorReply, Reply, ScriptedServer, text, tool_call
from tests.mcp.conftest import FAKE_SERVER


def _lines(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


def _tool_results(server: ScriptedServer, request: int) -> list[str]:
    return [m["content"] for m in server.requests[request].messages if m["role"] == "tool"]


# -- --dangerously-skip-permissions ---------------------------------------------------------------


def test_skip_permissions_runs_commands_with_one_warning_and_keeps_the_rails(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        tool_call("bash", {"command": "touch made.txt"}, id="c1"),
        tool_call("write", {"path": ".git/hooks/pre-commit", "content": "evil"}, id="c2"),
        text("done"),
    )
    run = run_agentsh("-p", "go", "--dangerously-skip-permissions", "--output-format", "json")
    assert run.code == 0, run.stderr
    assert (project / "made.txt").exists()  # asked nothing: ran
    assert not (project / ".git" / "hooks" / "pre-commit").exists()  # .git/ stays guarded
    [warning] = [line for line in run.stderr.splitlines() if "skip-permissions" in line]
    assert warning.startswith("agentsh: warning: --dangerously-skip-permissions: ")
    assert ".git/" in warning
    result = _lines(run)[-1]
    assert [d["tool_use_id"] for d in result["permission_denials"]] == ["c2"]


def test_skip_permissions_conflicts_with_another_mode(run_agentsh: AgentshRunner) -> None:
    run = run_agentsh("-p", "go", "--dangerously-skip-permissions", "--permission-mode", "plan")
    assert run.code == 2
    assert "--permission-mode plan" in run.stderr


# -- --add-dir ------------------------------------------------------------------------------------


def test_add_dir_lets_edits_land_in_another_folder_but_not_through_a_link_out_of_it(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    elsewhere = tmp_path / "elsewhere"
    shared.mkdir()
    elsewhere.mkdir()
    (shared / "out").symlink_to(elsewhere)
    scripted_server.script(
        tool_call("write", {"path": str(shared / "notes.txt"), "content": "hi\n"}, id="c1"),
        tool_call("write", {"path": str(shared / "out" / "x.txt"), "content": "x"}, id="c2"),
        text("done"),
    )
    run = run_agentsh("-p", "write", "--approve", "edits", "--add-dir", str(shared))
    assert run.code == 0, run.stderr
    assert (shared / "notes.txt").read_text() == "hi\n"
    assert not (elsewhere / "x.txt").exists()
    _written, refused = _tool_results(scripted_server, 2)
    assert "outside" in refused and "--add-dir" in refused
    # The model is told which folders it may use besides the project.
    system = scripted_server.requests[0].messages[0]["content"]
    assert str(shared) in system


def test_without_add_dir_the_same_write_is_refused(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    scripted_server.script(
        tool_call("write", {"path": str(shared / "notes.txt"), "content": "hi\n"}), text("ok")
    )
    assert run_agentsh("-p", "write", "--approve", "edits").code == 0
    assert not (shared / "notes.txt").exists()


def test_add_dir_must_name_a_folder(run_agentsh: AgentshRunner, tmp_path: Path) -> None:
    run = run_agentsh("-p", "go", "--add-dir", str(tmp_path / "missing"))
    assert run.code == 2
    assert "--add-dir" in run.stderr and "is not a folder" in run.stderr


# -- --mcp-config / --strict-mcp-config ---------------------------------------------------------


def _fake_servers(name: str) -> dict[str, Any]:
    return {"mcpServers": {name: {"command": sys.executable, "args": [str(FAKE_SERVER)]}}}


def test_mcp_config_from_a_string_and_a_file_and_strict_leaves_out_the_users(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    agentsh_home: Path,
    fast_retries: Path,
    tmp_path: Path,
) -> None:
    with fast_retries.open("a") as config:  # a loaded machine starts two servers slowly
        config.write("[mcp]\nstartup_timeout_s = 60\n")
    # The user's own mcp.json names a server that --strict-mcp-config leaves out.
    user_mcp = agentsh_home / "config" / "mcp.json"
    user_mcp.parent.mkdir(parents=True, exist_ok=True)
    user_mcp.write_text(json.dumps(_fake_servers("mine")))
    from_file = tmp_path / "servers.json"
    from_file.write_text(json.dumps(_fake_servers("filed")))
    scripted_server.script(tool_call("mcp__given__echo", {"text": "hello"}), text("done"))
    run = run_agentsh(
        "-p",
        "echo",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        json.dumps(_fake_servers("given")),
        str(from_file),
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__given__*",
    )
    assert run.code == 0, run.stderr
    init = _lines(run)[0]
    assert sorted(s["name"] for s in init["mcp_servers"]) == ["filed", "given"]
    assert all(s["status"] == "connected" for s in init["mcp_servers"])
    assert "mcp__given__echo" in init["tools"]
    [result] = _tool_results(scripted_server, 1)
    assert "hello" in result


def test_mcp_config_that_is_not_json_is_a_usage_error(run_agentsh: AgentshRunner) -> None:
    run = run_agentsh("-p", "go", "--mcp-config", "{not json")
    assert run.code == 2
    assert "--mcp-config" in run.stderr and "not valid JSON" in run.stderr


# -- --settings -----------------------------------------------------------------------------------


def test_settings_rules_mode_and_env_apply_and_the_rest_is_named_once(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTSH_SETTINGS_PROBE", "before")  # restored after the test
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash(touch:*)"],
                    "deny": ["Bash(rm:*)"],
                    "defaultMode": "acceptEdits",
                    "ask": ["Bash(npm publish)"],
                },
                "env": {"AGENTSH_SETTINGS_PROBE": "after"},
                "hooks": {"PreToolUse": []},
                "statusLine": {"type": "command"},
            }
        )
    )
    scripted_server.script(
        tool_call("bash", {"command": "touch ruled.txt"}, id="c1"),  # the allow rule
        tool_call("write", {"path": "edited.txt", "content": "e"}, id="c2"),  # acceptEdits
        tool_call("bash", {"command": "rm ruled.txt"}, id="c3"),  # the deny rule
        text("done"),
    )
    run = run_agentsh("-p", "go", "--settings", str(settings))
    assert run.code == 0, run.stderr
    assert (project / "ruled.txt").exists()
    assert (project / "edited.txt").read_text() == "e"
    assert "Bash(rm:*)" in _tool_results(scripted_server, 3)[-1]
    assert os.environ["AGENTSH_SETTINGS_PROBE"] == "after"
    [ignored] = [line for line in run.stderr.splitlines() if "--settings" in line]
    assert ignored == (
        "agentsh: warning: --settings: agentsh ignores hooks, statusLine, permissions.ask"
    )


def test_settings_as_a_json_string_and_flags_win(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(tool_call("write", {"path": "x.txt", "content": "x"}), text("ok"))
    given = json.dumps({"permissions": {"defaultMode": "acceptEdits"}, "model": "openai/other"})
    run = run_agentsh("-p", "go", "--settings", given, "--permission-mode", "default")
    assert run.code == 0, run.stderr
    assert not (project / "x.txt").exists()  # --permission-mode default won over the settings
    assert scripted_server.requests[0].body["model"] == "test-model"  # -m won over "model"


def test_settings_that_skip_permissions_say_so_as_loudly_as_the_flag(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(tool_call("bash", {"command": "touch bypassed.txt"}), text("ok"))
    given = json.dumps({"permissions": {"defaultMode": "bypassPermissions"}})
    run = run_agentsh("-p", "go", "--settings", given)
    assert run.code == 0, run.stderr
    assert (project / "bypassed.txt").exists()
    [warning] = [line for line in run.stderr.splitlines() if "bypassPermissions" in line]
    assert warning.startswith("agentsh: warning: --settings' permissions.defaultMode ")
    assert "without asking" in warning


def test_settings_can_forbid_skipping_permissions(run_agentsh: AgentshRunner) -> None:
    given = json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}})
    run = run_agentsh("-p", "go", "--settings", given, "--dangerously-skip-permissions")
    assert run.code == 2
    assert "disableBypassPermissionsMode" in run.stderr


# -- --tools --------------------------------------------------------------------------------------


def _offered(server: ScriptedServer) -> list[str]:
    return [t["function"]["name"] for t in server.requests[0].body.get("tools") or []]


@pytest.mark.parametrize(
    ("given", "offered"),
    [
        ("Read,memory", ["read", "grep", "find", "ls", "memory"]),
        ("", []),
        ("default", ["read", "write", "edit", "bash", "grep", "find", "ls"]),
    ],
)
def test_tools_restricts_the_built_in_tools(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, given: str, offered: list[str]
) -> None:
    scripted_server.script(text("ok"))
    run = run_agentsh("-p", "hi", "--tools", given)
    assert run.code == 0, run.stderr
    names = _offered(scripted_server)
    assert names[: len(offered)] == offered
    if given != "default":
        assert names == offered


def test_tools_names_an_unknown_tool_clearly(run_agentsh: AgentshRunner) -> None:
    run = run_agentsh("-p", "hi", "--tools", "WebFetch")
    assert run.code == 2
    assert "--tools: no built-in tool 'WebFetch'" in run.stderr


# -- --fallback-model -----------------------------------------------------------------------------


def test_fallback_model_takes_over_when_the_model_stays_overloaded(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    overloaded = ErrorReply(529, "Overloaded", type="overloaded_error")
    # the first call and its 3 retries, then the fallback answers both calls of the turn
    scripted_server.script(
        *[overloaded] * 4, tool_call("read", {"path": "missing.txt"}), text("from the fallback")
    )
    spare = "openai/gpt-4.1"  # a model litellm knows: a 1M window and a price
    run = run_agentsh("-p", "hi", "--fallback-model", spare, "--output-format", "events")
    assert run.code == 0, run.stderr
    *events, result = _lines(run)
    assert result["result"] == "from the fallback"
    models = [r.body["model"] for r in scripted_server.requests]
    assert models == ["test-model"] * 4 + ["gpt-4.1"] * 2  # and stays there
    assert f"going on with {spare} (--fallback-model)" in run.stderr
    # the model that serves sizes the context and prices the calls, not the primary
    status = [e["status"] for e in events if e["type"] == "status_changed"][-1]
    assert (status["model"], status["window"]) == (spare, 1_047_576)
    assert [e["model"] for e in events if e["type"] == "usage_reported"] == [spare, spare]
    assert list(result["modelUsage"]) == [spare]
    assert result["modelUsage"][spare]["costUSD"] == result["total_cost_usd"] > 0


def test_fallback_model_takes_over_when_the_model_keeps_timing_out(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, fast_retries: Path
) -> None:
    # The provider takes the request and sends nothing within the timeout, each time.
    with fast_retries.open("a") as config:
        config.write("request_timeout_s = 1.0\nmax_retries = 1\n")
    late = Reply(text="late", delay_s=3.0)
    scripted_server.script(late, late, text("from the fallback"))
    spare = "openai/gpt-4.1"
    run = run_agentsh("-p", "hi", "--fallback-model", spare)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "from the fallback"
    assert [r.body["model"] for r in scripted_server.requests] == ["test-model"] * 2 + ["gpt-4.1"]
    # one line naming both models
    assert (
        f"agentsh: openai/test-model: timed out after 1 retry; going on with {spare} "
        "(--fallback-model)" in run.stderr
    ), run.stderr


def test_fallback_model_is_not_used_for_a_rate_limit(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(*[ErrorReply(429, "slow down")] * 4)
    run = run_agentsh("-p", "hi", "--fallback-model", "openai/spare-model")
    assert run.code == 1
    assert {r.body["model"] for r in scripted_server.requests} == {"test-model"}


def test_fallback_model_must_be_another_model_and_is_for_print_mode(
    run_agentsh: AgentshRunner, tmp_path: Path
) -> None:
    run = run_agentsh("-p", "hi", "--fallback-model", "openai/test-model")
    assert run.code == 2
    assert "another model" in run.stderr
    from agentsh.cli import build_parser
    from agentsh.errors import CliError
    from agentsh.run_options import resolve

    args = build_parser().parse_args(["--fallback-model", "openai/spare"])
    with pytest.raises(CliError, match="with -p only"):
        resolve(args, tmp_path, headless=False)  # the TUI's call


def test_agentsh_acp_names_the_flags_it_does_not_take(
    run_agentsh: AgentshRunner, tmp_path: Path
) -> None:
    run = run_agentsh("--add-dir", str(tmp_path), "--dangerously-skip-permissions", "acp")
    assert run.code == 2
    assert "--dangerously-skip-permissions, --add-dir: not taken by `agentsh acp`" in run.stderr


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        (["--max-turns", "3", "acp"], "--max-turns"),
        (["--output-format", "json", "--verbose", "acp"], "--output-format, --verbose"),
        (["--permission-mode", "plan", "acp"], "--permission-mode"),
        (["--no-session", "-c", "sessions"], "--continue, --no-session"),
        (["--approve", "all", "sessions", "search", "x"], "--approve"),
        (["--resume", "abc", "mcp", "list"], "--resume"),
    ],
)
def test_options_before_a_command_that_does_not_read_them_are_refused(
    argv: list[str], refused: str, agentsh_home: Path
) -> None:
    """Not dropped in silence: `agentsh --max-turns 3 acp` would run without the limit."""
    from tests.fakes.in_process import run_cli

    run = run_cli(argv)
    assert run.code == 2, run.stderr
    command = next(word for word in argv if word in ("acp", "sessions", "mcp"))
    assert run.stderr.startswith(f"agentsh: {refused}: not taken by `agentsh {command}`")
    assert run.stderr.count("\n") == 1  # one line


def test_a_command_still_reads_its_own_options_and_model_flags_pass(
    agentsh_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's own options are its own; -m/--api-base pass everywhere
    (a shell alias puts them before every command); `--trust-project mcp list` is read."""
    from tests.fakes.in_process import run_cli

    monkeypatch.chdir(tmp_path)
    for argv in (
        ["-m", "openai/x", "--api-base", "http://127.0.0.1:9", "sessions", "--json"],
        ["--trust-project", "mcp", "list", "--json"],
        ["sessions", "search", "needle", "--json"],
    ):
        run = run_cli(argv)
        assert run.code == 0, (argv, run.stderr)


def test_the_sdk_client_control_requests_model_mcp_and_context(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    """ClaudeSDKClient.set_model, get_mcp_status, toggle/reconnect_mcp_server and
    get_context_usage: answered (refused by name before)."""
    scripted_server.script(text("from the other"), text("from the first"))

    def control(request_id: str, **request: Any) -> str:
        line = {"type": "control_request", "request_id": request_id, "request": request}
        return json.dumps(line) + "\n"

    def user(text: str) -> str:
        return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"

    stdin = (
        control("r1", subtype="mcp_status")
        + control("r2", subtype="set_model", model="openai/other-model")
        + user("one")
        + control("r3", subtype="set_model", model=None)  # back to the model of the start
        + user("two")
        + control("r4", subtype="get_context_usage")
        + control("r5", subtype="mcp_toggle", serverName="fake", enabled=False)
        + control("r6", subtype="mcp_reconnect", serverName="ghost")
    )
    run = run_agentsh(
        *("-p", "--input-format", "stream-json", "--output-format", "stream-json"),
        *("--mcp-config", json.dumps(_fake_servers("fake")), "--strict-mcp-config"),
        input=stdin,
    )
    assert run.code == 0, run.stderr
    answers = {
        line["response"]["request_id"]: line["response"]
        for line in _lines(run)
        if line["type"] == "control_response"
    }
    assert answers.pop("r6")["error"] == "no MCP server named 'ghost'"
    assert all(a["subtype"] == "success" for a in answers.values()), answers
    # (control requests are answered as they arrive, during turn one here: its model)
    usage = answers["r4"]["response"]
    assert usage["model"].startswith("openai/") and usage["maxTokens"] == 128_000
    used = [c for c in usage["categories"] if c["name"] not in ("Autocompact buffer", "Free space")]
    assert 0 < usage["totalTokens"] == sum(c["tokens"] for c in used)
    [fake] = answers["r1"]["response"]["mcpServers"]
    assert (fake["name"], fake["status"], fake["scope"]) == ("fake", "connected", "user")
    assert {"echo", "crash"} <= {tool["name"] for tool in fake["tools"]}
    assert [r.body["model"] for r in scripted_server.requests] == ["other-model", "test-model"]


def test_print_only_flags_given_to_the_tui_are_named_once(tmp_path: Path) -> None:
    """`agentsh --max-turns 3 --output-format json` in a terminal runs the shell, which has no
    use for them: said in one start line, not dropped in silence."""
    from agentsh.cli import build_parser
    from agentsh.run_options import resolve

    parser = build_parser()
    args = parser.parse_args(["--max-turns", "3", "--output-format", "json", "--verbose"])
    [warning] = resolve(args, tmp_path, headless=False).warnings
    assert warning == "--output-format, --max-turns: for -p only; the shell ignores them"
    assert resolve(parser.parse_args([]), tmp_path, headless=False).warnings == ()
    assert resolve(args, tmp_path, headless=True).warnings == ()
