"""MCP server configuration: Claude Code's JSON files, config.toml, ${VAR}, and editing."""

from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

import pytest

from agentsh.config import load_config
from agentsh.mcp.servers_config import (
    ExpansionError,
    Scope,
    ServerSpec,
    Transport,
    load_mcp_config,
    parse_servers,
    remove_server,
    spec_from_acp,
    write_server,
)
from agentsh.paths import ProjectPaths, UserPaths


def _paths(home: Path, project: Path) -> tuple[UserPaths, ProjectPaths]:
    user = UserPaths(config_dir=home / "config", data_dir=home / "data", cache_dir=home / "c")
    user.config_dir.mkdir(parents=True, exist_ok=True)
    return user, ProjectPaths(project)


def _write_json(path: Path, servers: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))


def test_claude_code_files_and_config_toml_are_read_with_project_over_user(
    tmp_path: Path,
) -> None:
    user, project = _paths(tmp_path / "home", tmp_path / "proj")
    user.config_file.write_text(
        '[mcp.servers.toml_one]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n'
        '[mcp.servers.shared]\ncommand = "user-version"\n'
    )
    _write_json(
        user.mcp_file,
        {"web": {"type": "http", "url": "https://example.test/mcp", "headers": {"X": "1"}}},
    )
    _write_json(
        project.mcp_file,
        {
            "shared": {"command": "project-version", "env": {"A": "b"}},
            "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        },
    )
    config = load_mcp_config(user, project)
    assert config.problems == ()
    assert sorted(config.user) == ["shared", "toml_one", "web"]
    assert sorted(config.project) == ["events", "shared"]
    trusted = {s.name: s for s in config.servers(trusted=True)}
    assert trusted["shared"].command == "project-version"
    assert trusted["shared"].scope is Scope.PROJECT
    assert trusted["web"].transport is Transport.HTTP
    assert trusted["events"].transport is Transport.SSE
    untrusted = {s.name: s for s in config.servers(trusted=False)}
    assert sorted(untrusted) == ["shared", "toml_one", "web"]
    assert untrusted["shared"].command == "user-version"  # the project's cannot shadow it


def test_config_toml_servers_do_not_break_the_settings_loader(tmp_path: Path) -> None:
    user, project = _paths(tmp_path / "home", tmp_path / "proj")
    user.config_file.write_text('[mcp]\ncall_timeout_s = 5\n[mcp.servers.x]\ncommand = "y"\n')
    loaded = load_config(user, project)
    assert loaded.problems == ()
    assert loaded.settings.mcp.call_timeout_s == 5.0
    user.config_file.write_text('[mcp]\nservers = "nope"\n')
    (problem,) = load_config(user, project).problems
    assert problem.key == "mcp.servers" and "table of tables" in problem.message


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("not an object", "must be an object"),
        ({"args": ["x"]}, "needs a command"),
        ({"command": "x", "args": "a b"}, "args must be a list of strings"),
        ({"command": "x", "env": {"A": 1}}, "env must be an object of strings"),
        ({"type": "ftp", "url": "ftp://x"}, "type must be stdio, http or sse"),
        ({"type": "http", "url": "file:///etc/passwd"}, "needs an http:// or https:// url"),
        ({"type": "http", "url": "https://x", "headers": ["a"]}, "headers must be an object"),
        ({"command": "x", "startup_timeout_s": -1}, "positive number of seconds"),
        ({"command": "x", "enabled": "no"}, "enabled must be true or false"),
    ],
)
def test_a_bad_entry_is_one_clear_problem_and_the_rest_still_load(
    entry: object, message: str
) -> None:
    problems: list[str] = []
    raw = {"bad": entry, "good": {"command": "ok"}}
    specs = parse_servers(raw, scope=Scope.PROJECT, source=Path(".mcp.json"), problems=problems)
    assert [s.name for s in specs] == ["good"]
    (problem,) = problems
    assert problem.startswith(".mcp.json: server 'bad': ") and message in problem


def test_unsafe_server_names_and_broken_files_are_reported(tmp_path: Path) -> None:
    problems: list[str] = []
    raw = {"a b": {"command": "x"}, "x\x1b[31m": {"command": "x"}, "ok-1.2_3": {"command": "x"}}
    specs = parse_servers(raw, scope=Scope.USER, source=Path("m.json"), problems=problems)
    assert [s.name for s in specs] == ["ok-1.2_3"]
    assert len(problems) == 2 and all("a name is 1-64 letters" in p for p in problems)
    assert "\x1b" not in "".join(problems)
    user, project = _paths(tmp_path / "home", tmp_path / "proj")
    project.mcp_file.parent.mkdir(parents=True)
    project.mcp_file.write_text("{not json")
    (problem,) = load_mcp_config(user, project).problems
    assert problem.startswith(f"{project.mcp_file}: not valid JSON")


def test_variables_expand_at_launch_only_and_missing_ones_are_named() -> None:
    spec = ServerSpec(
        "gh",
        Transport.HTTP,
        Scope.USER,
        Path("m.json"),
        url="https://${HOST:-api.example.test}/mcp",
        headers=(("Authorization", "Bearer ${GH_TOKEN}"),),
    )
    assert spec.variables() == ("GH_TOKEN", "HOST")
    assert "${GH_TOKEN}" not in spec.describe() and "Authorization" in spec.describe()
    launch = spec.launch({"GH_TOKEN": "ghp_0123456789abcdef"})
    assert launch.url == "https://api.example.test/mcp"
    assert launch.headers == {"Authorization": "Bearer ghp_0123456789abcdef"}
    assert set(launch.secrets()) == {"Bearer ghp_0123456789abcdef", "ghp_0123456789abcdef"}
    with pytest.raises(ExpansionError, match=r"\$\{GH_TOKEN\} is not set"):
        spec.launch({})


def test_a_projects_server_may_not_read_a_model_providers_key() -> None:
    """Trusted or not, a project never gets the user's model keys (the trust question says
    so); a variable that is no secret (a host name) a trusted project's server may read."""
    url = "https://mcp.example.test/?k=${OPENAI_API_KEY}&h=${MCP_HOST}"
    project = ServerSpec("r", Transport.HTTP, Scope.PROJECT, Path(".mcp.json"), url=url)
    environ = {"OPENAI_API_KEY": "sk-0123456789", "MCP_HOST": "example"}
    with pytest.raises(ExpansionError, match=r"may not read \$\{OPENAI_API_KEY\}"):
        project.launch(environ)
    user = dataclasses.replace(project, scope=Scope.USER)
    assert "sk-0123456789" in user.launch(environ).url
    host = dataclasses.replace(project, url="https://mcp.example.test/?h=${MCP_HOST}")
    assert host.launch(environ).url.endswith("h=example")


@pytest.mark.parametrize(
    "variable",
    ["GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD",
     "SSH_AUTH_SOCK", "DATABASE_URL", "SENTRY_DSN", "GITHUB_PAT", "SLACK_BOT_COOKIE",
     # Passwords and connection strings under other names: a URL that carries them, a
     # proxy with user:password@ in it, a JWT.
     "MYSQL_PWD", "PGPASS", "GPG_PASSPHRASE", "REDIS_URL", "MONGODB_URI", "CELERY_BROKER_URL",
     "AMQP_URL", "POSTGRES_URL", "AZURE_STORAGE_CONNECTION_STRING", "HTTPS_PROXY", "http_proxy",
     "ALL_PROXY", "CI_JOB_JWT"],
)  # fmt: skip
def test_a_projects_server_may_not_read_any_secret(variable: str) -> None:
    """A trusted folder's .mcp.json may name any server (a look-alike of the user's own
    ``github``), and the trust question shows a header's name, not its value: a secret the
    user keeps in the environment never goes to a server the project chose. Their own
    mcp.json may pass it."""
    headers = (("Authorization", f"Bearer ${{{variable}}}"),)
    project = ServerSpec(
        "github", Transport.HTTP, Scope.PROJECT, Path(".mcp.json"), url="https://x.test/mcp",
        headers=headers,
    )  # fmt: skip
    assert project.refused_variables() == (variable,)
    with pytest.raises(ExpansionError, match=rf"may not read \$\{{{variable}\}}"):
        project.launch({variable: "ghp_0123456789abcdef"})
    user = dataclasses.replace(project, scope=Scope.USER)
    assert user.launch({variable: "ghp_0123456789abcdef"}).headers["Authorization"].endswith("def")
    stdio = ServerSpec(
        "lint", Transport.STDIO, Scope.PROJECT, Path(".mcp.json"), command="lint",
        env=(("T", f"${{{variable}}}"),),
    )  # fmt: skip
    with pytest.raises(ExpansionError, match="stay with you"):
        stdio.launch({variable: "ghp_0123456789abcdef"})


def test_the_shown_command_is_exact_and_env_values_stay_hidden() -> None:
    spec = ServerSpec(
        "db",
        Transport.STDIO,
        Scope.USER,
        Path(".mcp.json"),
        command="npx",
        args=("-y", "some server", "--token=${DB_TOKEN}"),
        env=(("DB_PASSWORD", "hunter2-hunter2"), ("MODE", "ro")),
    )
    shown = spec.describe()
    assert shown == "npx -y 'some server' '--token=${DB_TOKEN}'  (env: DB_PASSWORD, MODE)"
    launch = spec.launch({"DB_TOKEN": "tok"})
    assert launch.args[-1] == "--token=tok"
    assert launch.secrets() == ("hunter2-hunter2",)  # MODE=ro is not a secret


def test_a_secret_variable_is_a_secret_wherever_it_is_expanded() -> None:
    # Claude Code configs pass tokens as arguments and in URLs, not only in env and headers.
    environ = {"GH_TOKEN": "ghp-0123456789abcdef", "SERVICE_API_KEY": "sk-svc-0123456789"}
    environ |= {"SHARED_PASSWORD": "correct horse battery", "REGION": "eu-west-1-region"}
    stdio = ServerSpec(
        "gh",
        Transport.STDIO,
        Scope.USER,
        Path("mcp.json"),
        command="gh-mcp",
        args=("--token", "${GH_TOKEN}", "--region=${REGION}"),
        env=(("LOGIN", "${SHARED_PASSWORD}"),),  # a name that does not look secret
    )
    assert set(stdio.launch(environ).secrets()) == {"ghp-0123456789abcdef", "correct horse battery"}
    http = ServerSpec(
        "svc",
        Transport.HTTP,
        Scope.USER,
        Path("mcp.json"),
        url="https://mcp.example.test/mcp?apiKey=${SERVICE_API_KEY}",
    )
    assert http.launch(environ).secrets() == ("sk-svc-0123456789",)


def test_add_and_remove_keep_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"old": {"command": "o"}}, "other": 1}))
    spec = ServerSpec("new", Transport.HTTP, Scope.USER, path, url="https://x.test/mcp")
    assert write_server(path, spec) is False
    doc = json.loads(path.read_text())
    assert doc["other"] == 1
    assert doc["mcpServers"] == {
        "old": {"command": "o"},
        "new": {"type": "http", "url": "https://x.test/mcp"},
    }
    assert remove_server(path, "old") is True
    assert remove_server(path, "old") is False
    assert list(json.loads(path.read_text())["mcpServers"]) == ["new"]


def test_a_new_user_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "config" / "mcp.json"
    spec = ServerSpec("s", Transport.STDIO, Scope.USER, path, command="x", env=(("T", "secret"),))
    write_server(path, spec)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["mcpServers"]["s"] == {
        "command": "x",
        "args": [],
        "env": {"T": "secret"},
    }


def test_an_acp_clients_servers_become_specs_taken_literally() -> None:
    stdio = spec_from_acp(
        {
            "name": "fs",
            "command": "npx",
            "args": ["-y", "server-fs"],
            "env": [{"name": "TOKEN", "value": "${NOT_EXPANDED}-0123456789"}],
        }
    )
    assert (stdio.scope, stdio.transport, stdio.command) == (Scope.CLIENT, Transport.STDIO, "npx")
    assert stdio.launch({}).env == {"TOKEN": "${NOT_EXPANDED}-0123456789"}
    http = spec_from_acp(
        {
            "type": "http",
            "name": "docs",
            "url": "https://docs.example.test/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer abcdefgh12345"}],
        }
    )
    assert http.transport is Transport.HTTP and http.launch({}).headers["Authorization"]
    with pytest.raises(ValueError, match="env must be a list of"):
        spec_from_acp({"name": "x", "command": "y", "env": {"A": "b"}})
    with pytest.raises(ValueError, match="MCP server 'x': needs a command"):
        spec_from_acp({"name": "x", "args": []})
