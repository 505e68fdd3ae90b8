"""Every command's --help and usage error start with its own usage line ("usage: agentsh
sessions ..."), not agentsh's whole usage line with the command's name after it."""

from __future__ import annotations

import pytest

from agentsh import cli

COMMANDS = [
    ["sessions"], ["sessions", "show"], ["sessions", "export"], ["sessions", "search"],
    ["sessions", "import"], ["memory"], ["memory", "list"], ["memory", "search"], ["context"],
    ["compact"], ["checkpoints"], ["restore"], ["mcp"], ["mcp", "list"], ["mcp", "test"],
    ["acp"], ["trust"],
]  # fmt: skip


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_help_starts_with_the_commands_usage_and_says_what_it_does(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main([*words, "--help"])
    assert ended.value.code == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"usage: agentsh {' '.join(words)} ")
    assert "[options]" not in lines[0] and "COMMAND ..." not in lines[0]
    blank = lines.index("")  # the usage may take more than one line
    assert lines[blank + 1][0].isupper()  # what it does, before the options


@pytest.mark.parametrize(
    "words", [["context"], ["sessions", "show"], ["restore", "x"], ["memory"]], ids=" ".join
)
def test_a_usage_error_shows_the_commands_usage(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main(words)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: agentsh {words[0]} ")
    assert f"agentsh {' '.join(w for w in words if w != 'x')}: error: " in err


def test_mcp_add_names_only_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    """A server's arguments are optional: the error named ARGS as required."""
    with pytest.raises(SystemExit) as ended:
        cli.main(["mcp", "add", "web"])
    assert ended.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.endswith("the following arguments are required: COMMAND|URL")
