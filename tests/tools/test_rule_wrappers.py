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
        # A shell's options before and after -c, some taking the next word, and "--".
        "bash -o errexit -c 'rm -rf build'",
        "bash -O extglob -c 'rm -rf build'",
        "sh +o posix -c 'rm -rf build'",
        "bash --rcfile /dev/null -c 'rm -rf build'",
        "bash -c -- 'rm -rf build'",
        "bash -c -e 'rm -rf build'",
        # Programs that run a -c command through a shell, and more wrappers.
        "script -qc 'rm -rf build' /dev/null",
        "su -c 'rm -rf build' root",
        "sg wheel -c 'rm -rf build'",
        "fakeroot rm -rf build",
        "unshare -r rm -rf build",
        "chroot / rm -rf build",
        "strace -o /dev/null rm -rf build",
        "eatmydata rm -rf build",
        # A shell that reads its script from stdin runs what cannot be read here.
        "echo 'rm -rf build' | sh",
        "echo rm -rf build | bash -s",
        "echo rm -rf build | bash -",
        "echo rm -rf build | sudo sh",
        "echo rm -rf build | bash /dev/stdin",
        "echo rm -rf build | source /dev/stdin",
        "echo rm -rf build | . /dev/fd/0",
        # ... or from a file: what it runs is unknown here too (it was let through)
        "bash scripts/test.sh",
        "bash -o errexit scripts/test.sh",
        "sh -e scripts/test.sh",
        "echo rm -rf build | script -q /dev/null",
        "echo rm -rf build | su",
        "echo rm -rf build | sudo -s",
        "echo rm -rf build | sudo -i",
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
        "sudo -v",
        "nice make -j4",
        "find . -name '*.o' -print",
        'bash -c "make clean"',
    ],
)
def test_other_commands_still_run(command: str, tmp_path: Path) -> None:
    assert _allowed(command, tmp_path) is True


@pytest.mark.parametrize(
    "command",
    [
        "git --no-pager push origin main",
        "git -C . push origin main",
        "git -c push.default=current push",
        "git --git-dir .git push --force",
        "sudo git -P push",
    ],
)
def test_a_deny_rule_for_a_git_subcommand_sees_past_gits_own_options(
    command: str, tmp_path: Path
) -> None:
    """``Bash(git push:*)`` was matched against ``git --no-pager push`` as written: git's
    options before the subcommand hid it."""
    rules = ToolRules.parse(allow=["Bash"], deny=["Bash(git push:*)"])
    verdict = rules.check("bash", BashParams(command=command), tmp_path, tmp_path)
    assert verdict is not None and not verdict.allowed
    plain = rules.check("bash", BashParams(command="git -C . status"), tmp_path, tmp_path)
    assert plain is not None and plain.allowed
