"""A deny rule looks through the wrappers, shells and ``eval`` a command reaches ``rm`` by.

``--disallowedTools "Bash(rm:*)"`` let ``/bin/rm x``, ``sudo -u root rm``, ``timeout -s KILL 5
rm``, ``nice -n 5 rm``, ``bash -c "rm -rf x"``, ``eval rm``, ``find -exec rm`` and ``env -S`` run:
the wrapper's option values were read as the command, and shells were not looked into.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.tools.rules import ToolRules
from agentsh.tools.shell import BashParams

RULES = ToolRules.parse(allow=["Bash"], deny=["Bash(rm:*)"])


def _allowed(command: str, tmp_path: Path) -> bool | None:
    verdict = RULES.check("bash", BashParams(command=command), tmp_path, tmp_path)
    return None if verdict is None else verdict.allowed


@pytest.mark.parametrize(
    "command",
    [
        "/bin/rm -rf build",
        "sudo -u root rm -rf build",
        "doas -u root rm -rf build",
        "timeout -s KILL 5 rm -rf build",
        "timeout --signal KILL 5 rm -rf build",
        "nice -n 5 rm -rf build",
        "env -u HOME rm -rf build",
        'env -S"rm -rf build"',
        "exec -a innocent rm -rf build",
        "stdbuf -o0 rm -rf build",
        "setsid rm -rf build",
        "busybox rm -rf build",
        "xargs -I{} rm {}",
        'bash -c "rm -rf build"',
        'sh -ec "cd / && rm -rf build"',
        'sudo bash -lc "eval rm -rf build"',
        "eval rm -rf build",
        "find . -name '*.o' -exec rm {} +",
        'bash -c "echo $(rm -rf build)"',  # a script that cannot be read: refused too
    ],
)
def test_a_deny_rule_sees_the_command_behind_wrappers_and_shells(
    command: str, tmp_path: Path
) -> None:
    assert _allowed(command, tmp_path) is False


@pytest.mark.parametrize(
    "command",
    [
        "git rm --cached notes.txt",
        "echo rm is denied here",
        "grep -rn 'rm -rf' scripts",
        "git commit -m 'rm old build dirs'",
        "bash scripts/test.sh",
        "sudo -v",
        "nice make -j4",
        "find . -name '*.o' -print",
        'bash -c "make clean"',
    ],
)
def test_other_commands_still_run(command: str, tmp_path: Path) -> None:
    assert _allowed(command, tmp_path) is True
