"""What in a repository makes the user's own git commands run programs it names.

An allow rule such as ``Bash(git:*)`` lets the model run git commands without asking; the user
wrote it thinking of git. But a repository delivered as an archive (not cloned: a clone never
copies them) can carry executable ``.git/hooks/*`` and a ``.git/config`` that names programs:
``core.fsmonitor`` (run by ``git status``), ``core.hooksPath``, ``core.sshCommand``, aliases
(``!sh ...``), filter and diff drivers, credential helpers, an ``include.path`` that pulls in
any of these. Then ``git commit`` runs the repository's ``pre-commit``: code the user never
approved. :func:`armed_reason` says, in one line, what a repository carries of that kind, so
the approval layer can ask (or, in ``-p``, deny) instead of letting the rule cover the command.

Only the repository's own configuration counts (``local`` and ``worktree`` scope, with what
they include): the user's global and system settings are theirs. agentsh's own git calls are
disarmed (:mod:`agentsh.gitutil`) and need none of this.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from agentsh.gitutil import GitError, run_git

# Repository settings that name a program git runs (or another file of settings, another work
# tree, another place to push to). Keys as ``git config --list`` prints them: the section and
# the name lowercased, a subsection as written.
_PROGRAM_KEYS = re.compile(
    r"core\.(?:hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy|attributesfile"
    r"|worktree)"
    r"|sequence\.editor|diff\.external|diff\..+\.(?:command|textconv)|merge\..+\.driver"
    r"|filter\..+|gpg\..+|credential\..+|pager\..+|alias\..+|include\.path|includeif\..+\.path"
    r"|remote\..+\.(?:uploadpack|receivepack|vcs)|(?:difftool|mergetool|man|browser)\..+"
    r"|web\.browser|sendemail\..+|uploadpack\..+|ssh\.variant|protocol\..+|url\..+"
    r"|submodule\..+\.update|commit\.template",
    re.IGNORECASE,
)
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_MAX_HOOKS = 200  # entries of the hooks folder looked at
_SHOWN = 3  # names quoted in the reason; the rest are counted


def armed_reason(cwd: Path) -> str | None:
    """What the repository a git command in ``cwd`` would use carries that runs programs
    (hooks, program-naming settings), in one line; None when nothing (or no repository)."""
    try:
        listed = run_git(
            ["config", "--list", "--show-scope", "-z"], cwd=cwd, timeout=5, check=False
        )
        common = run_git(["rev-parse", "--git-common-dir"], cwd=cwd, timeout=5, check=False)
    except GitError:
        return None  # no git: the command fails as well
    keys, own_hooks = _program_keys(listed.stdout) if listed.returncode == 0 else ([], False)
    hooks: list[str] = []
    if common.returncode == 0 and not own_hooks:
        folder = common.stdout.decode("utf-8", "surrogateescape").strip()
        if folder:
            hooks = _active_hooks(cwd / folder / "hooks")  # an absolute folder stays one
    found = [f"hook {name}" for name in hooks] + [f"setting {key}" for key in keys]
    if not found:
        return None
    shown = ", ".join(found[:_SHOWN])
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return f"this repository's git runs programs it names ({shown}{more})"


def _program_keys(output: bytes) -> tuple[list[str], bool]:
    """The repository-scope keys among ``git config --list --show-scope -z`` entries that
    name programs, in order, each once; and whether the user's own settings point git at
    hooks of their own (``core.hooksPath``), so that the repository's are not run."""
    fields = output.decode("utf-8", "surrogateescape").split("\0")
    keys: dict[str, None] = {}
    own_hooks = False
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key = entry.split("\n", 1)[0]
        if scope in _REPOSITORY_SCOPES and _PROGRAM_KEYS.fullmatch(key):
            keys[key] = None
        elif scope in ("system", "global") and key.lower() == "core.hookspath":
            own_hooks = True
    return list(keys), own_hooks


def _active_hooks(folder: Path) -> list[str]:
    """The hooks git would run from ``folder``: executable files (or links to one) not named
    ``*.sample``, sorted."""
    names: list[str] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)[:_MAX_HOOKS]
    except OSError:
        return []
    for entry in entries:
        if entry.name.endswith(".sample"):
            continue
        try:
            info = entry.stat()  # a link counts as what it leads to, as for git
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_mode & 0o111:
            names.append(entry.name)
    return names
