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
_MAX_MODULES = 20  # submodules looked at
_SHOWN = 3  # names quoted in the reason; the rest are counted


def armed_reason(cwd: Path) -> str | None:
    """What the repository a git command in ``cwd`` would use carries that runs programs
    (hooks, program-naming settings, also of its submodules, which ``git status`` and a
    recursive checkout enter), in one line; None when nothing (or no repository)."""
    try:
        common = run_git(["rev-parse", "--git-common-dir"], cwd=cwd, timeout=5, check=False)
        folder = common.stdout.decode("utf-8", "surrogateescape").strip()
        git_dir = cwd / folder if common.returncode == 0 and folder else None
        bare = _BARE.search(common.stderr.decode("utf-8", "surrogateescape"))
        if bare is not None:
            # agentsh's own git uses a bare repository only when named; the user's git finds
            # one in the folder (or above it) and obeys its config and hooks.
            git_dir = Path(bare.group(1))
            found = _armed(cwd, git_dir, git_dir, "")
        else:
            found = _armed(cwd, None, git_dir, "")
        if git_dir is not None:
            for module in _modules(git_dir):
                name = module.relative_to(git_dir / "modules").as_posix()
                found += _armed(cwd, module, module, f"submodule {name}: ")
    except GitError:
        return None  # no git: the command fails as well
    if not found:
        return None
    shown = ", ".join(found[:_SHOWN])
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return f"this repository's git runs programs it names ({shown}{more})"


_BARE = re.compile(r"cannot use bare repository '(.+?)' \(safe\.bareRepository")


def _armed(cwd: Path, git_dir: Path | None, hooks_of: Path | None, prefix: str) -> list[str]:
    """The hooks (in ``hooks_of``) and program settings of one repository (``git_dir``: a
    submodule's or a bare one; None: the one git finds from ``cwd``)."""
    listed = run_git(
        ["config", "--list", "--show-scope", "-z"],
        cwd=cwd,
        git_dir=git_dir,
        timeout=5,
        check=False,
    )
    keys, own_hooks = _program_keys(listed.stdout) if listed.returncode == 0 else ([], False)
    if prefix:  # a submodule's config names its work tree: that is how they work
        keys = [key for key in keys if key.lower() != "core.worktree"]
    hooks = _active_hooks(hooks_of / "hooks") if hooks_of is not None and not own_hooks else []
    return [f"{prefix}hook {name}" for name in hooks] + [f"{prefix}setting {key}" for key in keys]


def _modules(git_dir: Path) -> list[Path]:
    """The submodules' repositories under ``git_dir/modules`` (nested ones too), a few."""
    found: list[Path] = []
    pending = [git_dir / "modules"]
    while pending and len(found) < _MAX_MODULES:
        folder = pending.pop(0)
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if (path / "HEAD").is_file() or (path / "config").is_file():
                found.append(path)
                pending.append(path / "modules")
            else:
                pending.append(path)  # a submodule named "a/b" lives at modules/a/b
    return found[:_MAX_MODULES]


def git_folders(parts: list[str], cwd: Path) -> list[Path] | None:
    """Where each git command of a command line runs, following ``cd``/``pushd`` parts
    before it; None when a move cannot be followed (``cd -``, a variable, ``~user``)."""
    here = cwd
    folders: list[Path] = []
    for part in parts:
        words = part.split(" ")
        if words[0] in ("cd", "pushd", "popd", "chdir"):
            target = " ".join(words[1:]) or "~"
            if target == "~":
                target = str(Path.home())
            if words[0] == "popd" or target.startswith(("-", "~")) or "$" in target:
                return None
            here = here / target  # an absolute target replaces ``here``
            if not here.is_dir():
                return None  # the move fails, and what runs next runs who knows where
        elif _RUNS_GIT.search(part):
            folders.append(here)
    return list(dict.fromkeys(folders))


# A simple command that runs git (``git ...``, ``/usr/bin/git ...``, ``sudo git ...``).
_RUNS_GIT = re.compile(r"(?:^|[\s/])git(?:\s|$)")


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
