"""``agentsh mcp list | add | remove | test``, in process (the servers are real for ``test``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentsh.cli import main
from tests.mcp.conftest import FAKE_SERVER


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_and_remove_in_claude_codes_format(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "mcp",
        "add",
        "-e",
        "TOKEN=${MY_TOKEN}",
        "git",
        "--",
        "uvx",
        "mcp-server-git",
        "--repository",
        ".",
    )
    assert code == 0, out
    assert out.startswith("Added stdio server 'git' in ")
    user_file = agentsh_home / "config" / "mcp.json"
    assert json.loads(user_file.read_text()) == {
        "mcpServers": {
            "git": {
                "command": "uvx",
                "args": ["mcp-server-git", "--repository", "."],
                "env": {"TOKEN": "${MY_TOKEN}"},
            }
        }
    }
    code, out, _ = run(
        capsys,
        "mcp",
        "add",
        "-t",
        "http",
        "-s",
        "project",
        "-H",
        "Authorization: Bearer ${T}",
        "docs",
        "https://docs.example.test/mcp",
    )
    assert code == 0 and "Project servers start only in a trusted project." in out
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["docs"] == {
        "type": "http",
        "url": "https://docs.example.test/mcp",
        "headers": {"Authorization": "Bearer ${T}"},
    }
    code, out, _ = run(capsys, "mcp", "list", "--json")
    listed = {s["name"]: s for s in json.loads(out)["servers"]}
    assert listed["git"]["status"] == "starts with agentsh"
    assert listed["git"]["env"] == ["TOKEN"] and listed["git"]["variables"] == ["MY_TOKEN"]
    assert listed["docs"]["status"] == "not started: the project is not trusted"
    assert listed["docs"]["headers"] == ["Authorization"]
    code, out, _ = run(capsys, "mcp", "list")
    assert "docs  (project, .mcp.json) - not started: the project is not trusted" in out
    assert "    http https://docs.example.test/mcp  (headers: Authorization)" in out
    code, out, _ = run(capsys, "mcp", "remove", "git")
    assert code == 0 and out.startswith("Removed 'git' from ")
    assert json.loads(user_file.read_text()) == {"mcpServers": {}}


def test_headers_and_scope_after_the_url_as_in_claude_codes_examples(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`claude mcp add --transport http api URL --header "..."`: refused before ("takes a URL
    only"), the header read as an argument."""
    code, _, err = run(
        capsys,
        *("mcp", "add", "--transport", "http", "api", "https://api.example.test/mcp"),
        *("--header", "Authorization: Bearer ${API_TOKEN}", "-H", "X-Team: t1"),
        *("--scope", "project"),
    )
    assert code == 0, err
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["api"] == {
        "type": "http",
        "url": "https://api.example.test/mcp",
        "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Team": "t1"},
    }


def test_mistakes_are_one_line_errors(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "mcp", "add", "bad name", "--", "x")
    assert code == 2 and "cannot be a server name" in err
    code, _, err = run(capsys, "mcp", "add", "-t", "http", "web", "ftp://x")
    assert code == 2 and "is not an http:// or https:// URL" in err
    code, _, err = run(capsys, "mcp", "add", "-t", "http", "web", "https://x.test/mcp", "-e", "A=1")
    assert code == 2 and "unexpected '-e' after the URL" in err
    code, _, err = run(capsys, "mcp", "remove", "ghost")
    assert code == 1 and "no MCP server named 'ghost'" in err
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"command": "rm"}}}))
    code, _, err = run(capsys, "mcp", "test", "evil")
    assert code == 1 and "The project is not trusted, so it is not started" in err
    assert "    rm" in err


def test_test_starts_the_server_and_lists_its_tools(
    project: Path, agentsh_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(capsys, "mcp", "add", "fake", "--", sys.executable, str(FAKE_SERVER))
    assert code == 0
    code, out, err = run(capsys, "mcp", "test", "fake")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("'fake' (agentsh-fake 1.0) is ready after ")
    assert "mcp__fake__echo  ~" in out
    assert "left out: bad_schema: left out: its input schema is not valid" in out
    code, out, err = run(capsys, "mcp", "add", "broken", "--", "no-such-command-xyz")
    code, out, err = run(capsys, "mcp", "test", "broken")
    assert code == 1 and "'broken' did not start" in err and "command not found" in err
