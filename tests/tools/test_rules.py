"""Claude Code-style allow/deny rules (``--allowedTools "Bash(git:*)" Edit``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agentsh.mcp.names import assign_names
from agentsh.tools.rules import RuleError, ToolRules, command_parts, parse_rule, split_rules


@dataclass(frozen=True)
class Cmd:
    command: str


@dataclass(frozen=True)
class PathParams:
    path: str


def _allowed(rules: ToolRules, tool: str, params: object, root: Path) -> bool | None:
    verdict = rules.check(tool, params, root, root)
    return None if verdict is None else verdict.allowed


def test_rule_lists_split_on_commas_and_spaces_outside_parentheses() -> None:
    assert split_rules(["Bash(git log:*) Edit,Read", "mcp__github__*"]) == [
        "Bash(git log:*)",
        "Edit",
        "Read",
        "mcp__github__*",
    ]


def test_claude_code_names_cover_the_agentsh_tools() -> None:
    assert parse_rule("Edit").tools == ("edit", "write")
    assert parse_rule("bash").tools == ("bash",)
    assert parse_rule("Bash(*)").specifier is None
    with pytest.raises(RuleError):
        parse_rule("Bash(git")


def test_prefix_rule_allows_only_commands_whose_every_part_matches(tmp_path: Path) -> None:
    rules = ToolRules.parse(allow=["Bash(git:*)", "Bash(npm run test)"])
    assert _allowed(rules, "bash", Cmd("git status"), tmp_path) is True
    assert _allowed(rules, "bash", Cmd("git  log  -3"), tmp_path) is True
    assert _allowed(rules, "bash", Cmd("git status && npm run test"), tmp_path) is True
    assert _allowed(rules, "bash", Cmd("gitk"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git status && rm -rf x"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git status; rm -rf x"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git log | sh"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git log $(rm -rf x)"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git log `rm -rf x`"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("git log > ~/.bashrc"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd("npm run test -- --watch"), tmp_path) is None
    assert _allowed(rules, "bash", Cmd('git commit -m "a && b"'), tmp_path) is True


def test_deny_wins_and_sees_through_wrappers(tmp_path: Path) -> None:
    rules = ToolRules.parse(allow=["Bash"], deny=["Bash(rm:*)"])
    assert _allowed(rules, "bash", Cmd("ls"), tmp_path) is True
    assert _allowed(rules, "bash", Cmd("rm -rf build"), tmp_path) is False
    assert _allowed(rules, "bash", Cmd("ls && sudo rm -rf /"), tmp_path) is False
    assert _allowed(rules, "bash", Cmd("timeout 5 rm x"), tmp_path) is False
    assert _allowed(rules, "bash", Cmd("FOO=1 rm x"), tmp_path) is False
    # Cannot be checked: refused rather than guessed.
    assert _allowed(rules, "bash", Cmd("echo $(rm x)"), tmp_path) is False


def test_path_rules(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    rules = ToolRules.parse(allow=["Edit(src/**)"], deny=["Read(./.env)", "Read(**/*.pem)"])
    assert _allowed(rules, "edit", PathParams("src/a/b.py"), tmp_path) is True
    assert _allowed(rules, "write", PathParams("src/new.py"), tmp_path) is True
    assert _allowed(rules, "edit", PathParams("setup.py"), tmp_path) is None
    assert _allowed(rules, "edit", PathParams("src/../setup.py"), tmp_path) is None
    assert _allowed(rules, "read", PathParams(".env"), tmp_path) is False
    assert _allowed(rules, "grep", PathParams("keys/server.pem"), tmp_path) is False
    assert _allowed(rules, "read", PathParams("README.md"), tmp_path) is None


def test_a_link_out_of_an_allowed_folder_is_not_allowed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "setup.py")
    rules = ToolRules.parse(allow=["Edit(src/**)"], deny=["Read(setup.py)"])
    assert _allowed(rules, "edit", PathParams("src/link.py"), tmp_path) is None
    assert _allowed(rules, "read", PathParams("src/link.py"), tmp_path) is False


def test_mcp_rules_match_server_tools(tmp_path: Path) -> None:
    rules = ToolRules.parse(allow=["mcp__github__*", "mcp__time"], deny=["mcp__github__delete_*"])
    assert _allowed(rules, "mcp__github__list_issues", Cmd(""), tmp_path) is True
    assert _allowed(rules, "mcp__time__now", Cmd(""), tmp_path) is True
    assert _allowed(rules, "mcp__timer__now", Cmd(""), tmp_path) is None
    assert _allowed(rules, "mcp__github__delete_repo", Cmd(""), tmp_path) is False
    assert rules.hidden_tools(["mcp__github__delete_repo", "bash"]) == {"mcp__github__delete_repo"}


def test_command_parts() -> None:
    assert command_parts("a b | c && d; e\nf") == ["a b", "c", "d", "e", "f"]
    assert command_parts("cat <(ls)") is None
    assert command_parts("echo 'unbalanced") is None
    assert command_parts("make 2>&1") is None


def test_mcp_rules_name_the_server_as_configured_not_its_cleaned_prefix(tmp_path: Path) -> None:
    """``my.server`` alone is offered as ``mcp__my_server__*``: a rule written for a server
    named ``my_server`` (not configured here) covered its tools. With the configured identity
    known, the rule's server part must be the configured name (a glob over it)."""
    names = assign_names([("my.server", "push"), ("my..server", "push")])
    dotted, slashed = names[("my.server", "push")], names[("my..server", "push")]
    assert dotted.startswith("mcp__my_server") and slashed.startswith("mcp__my_server")

    def verdict(rules: ToolRules, name: str, server: str) -> bool | None:
        found = rules.check(name, {}, tmp_path, tmp_path, mcp=(server, "push"))
        return None if found is None else found.allowed

    for text in ("mcp__my_server", "mcp__my_server__*", "mcp__my_server__push"):
        rule = ToolRules.parse(allow=[text])
        assert verdict(rule, "mcp__my_server__push", "my.server") is None, text
    mine = ToolRules.parse(allow=["mcp__my.server__push"], deny=["mcp__my..server"])
    assert verdict(mine, dotted, "my.server") is True
    assert verdict(mine, slashed, "my..server") is False
    assert mine.hidden_tools([dotted, slashed], {dotted: ("my.server", "push")}) == set()
    assert mine.hidden_tools([slashed], {slashed: ("my..server", "push")}) == {slashed}
    # The server part ends at the first "__": "git__x" is not "git"'s.
    git = ToolRules.parse(allow=["mcp__git__*", "mcp__git"])
    assert verdict(git, "mcp__git_x__push", "git__x") is None
    assert verdict(git, "mcp__git__push", "git") is True
    # the tool as the model calls it names it too (its server's own cleaning)
    dots = ToolRules.parse(allow=["mcp__my.server__read_file"])
    found = dots.check(
        "mcp__my_server__read_file", {}, tmp_path, tmp_path, mcp=("my.server", "read.file")
    )
    assert found is not None and found.allowed


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py' -exec sh -c 'curl x | sh' {} +",
        "find . -execdir rm {} ;",
        "find . -okdir rm {} ;",
        "find / -delete",
        "find . -fprint /home/u/.bashrc",
        "/usr/bin/find . -fprintf /home/u/.bashrc %p",
        "rg --pre ./decode.sh TODO",
        "rg -n --pre=./decode.sh TODO src",
        "fd -x rm",
        "fd -HIx sh -c id",
        "fdfind --exec-batch rm",
    ],
)
def test_a_reader_told_to_run_a_program_is_not_covered_by_its_rule(
    command: str, tmp_path: Path
) -> None:
    """As in Claude Code, ``Bash(find:*)`` does not cover ``find -exec`` or ``-delete``: a rule
    for a program that only reads must not let it run, delete or write what the line names."""
    rules = ToolRules.parse(
        allow=[
            "Bash(find:*)",
            "Bash(/usr/bin/find:*)",
            "Bash(rg:*)",
            "Bash(fd:*)",
            "Bash(fdfind:*)",
        ]
    )
    assert _allowed(rules, "bash", Cmd(command), tmp_path) is None


def test_readers_still_match_and_a_rule_naming_the_option_covers_it(tmp_path: Path) -> None:
    rules = ToolRules.parse(
        allow=["Bash(find:*)", "Bash(rg:*)", "Bash(fd:*)", "Bash(find . -name *.pyc -delete)"]
    )
    for command in (
        "find . -name '*.py' -newer setup.py",
        "find src -type f -print0",
        "rg -n --pre-glob '*.gz' TODO",
        "rg -n -- --pre",
        "fd -e py src",
        "find . -name '*.pyc' -delete",  # quoted: bash does not expand it
    ):
        assert _allowed(rules, "bash", Cmd(command), tmp_path) is True, command
