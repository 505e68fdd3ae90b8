"""Every git command agentsh runs on its own goes through here, disarmed.

A project's ``.git/config`` is untrusted: a cloned repository (or a model that wrote the file)
can make plain ``git status`` run any program through ``core.fsmonitor``, hooks, a pager,
attribute-driven filters (``filter.<x>.clean``/``smudge``/``process``), diff drivers
(``diff.external``, ``diff.<x>.textconv``/``command``), merge drivers, signature programs, or a
transport (``core.sshCommand``, credential helpers). Each is switched off by configuration that
outranks the repository's (command-line scope), so agentsh's own git calls run no repository-chosen
program at all:

- fixed overrides: fsmonitor off, hooks pointed at ``/dev/null``, no pager or editor, no
  transport (``protocol.allow=never``), no credential helpers, no signing or signature checks,
  no automatic gc/maintenance, submodules not entered, bare repositories only when named;
- attribute drivers: their names are user data, so the configured ones are listed first
  (``git config`` runs nothing) and each program key is blanked, passed through
  ``GIT_CONFIG_KEY_<n>`` so a driver name holding ``=`` cannot bend the parsing;
- the git binary is looked up on the absolute entries of ``PATH`` only, never the project folder.

Commands that list untracked files read the repository's ignore patterns, which can make
git's matcher spin: they go through :func:`agentsh.git_listing.run_listing`, which keeps git
out of a repository with such a line and bounds the rest.

Diff-producing subcommands get ``--no-ext-diff --no-textconv`` as well, so they fall back to
git's own diff instead of failing on a blanked driver. Commands that cannot run attribute
drivers (``ls-files``, ``rev-parse``, plumbing on objects) skip the listing step; everything else
pays one extra short process for it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.git_pointer import foreign_reason, foreign_repository
from agentsh.git_stalls import discover, stall_reason
from agentsh.programs import find_program

# Overrides that hold for every command; command-line scope outranks every config file.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("safe.bareRepository", "explicit"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("diff.external", ""),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("color.ui", "false"),
)

# Environment that keeps git from asking, paging, editing or reaching out.
SAFE_ENV: Mapping[str, str] = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_SSH_COMMAND": "false",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "LC_ALL": "C",
}
# Inherited variables that would run a program or point git at a different repository's
# program; the caller's own GIT_DIR/GIT_WORK_TREE are set through the parameters instead.
_DROP_ENV = (
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_PROXY_COMMAND",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
)

_NEVER_FROM_CALLER = frozenset(
    {
        "GIT_EXTERNAL_DIFF",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_PROXY_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_PAGER",
        "PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
    }
)

# Attribute-driver keys that name a program; the subsection is the driver's name.
_DRIVER_PROGRAMS = {
    "filter": ("clean", "smudge", "process"),
    "diff": ("textconv", "command"),
    "merge": ("driver",),
}
# Subcommands that never run an attribute driver: no listing needed before them.
_NO_DRIVERS = frozenset(
    {
        "ls-files",
        "ls-tree",
        "rev-parse",
        "rev-list",
        "write-tree",
        "commit-tree",
        "mktree",
        "update-ref",
        "symbolic-ref",
        "show-ref",
        "for-each-ref",
        "merge-base",
        "init",
        "config",
        "version",
        "var",
        "count-objects",
    }
)

# Diff-producing subcommands also get flags that skip external diff programs and textconv
# outright (a blanked ``diff.<x>.command`` would make them fail instead of falling back).
_NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv")
_DIFF_FAMILY = frozenset(
    {
        "diff",
        "log",
        "show",
        "whatchanged",
        "format-patch",
        "diff-tree",
        "diff-index",
        "diff-files",
        "range-diff",
    }
)
_TEXTCONV_ONLY = frozenset({"blame", "annotate", "grep"})

DEFAULT_TIMEOUT = 30.0


class GitError(AgentshError, RuntimeError):
    """git could not be run, timed out, or exited non-zero (when the caller asked to check)."""


class GitTimeout(GitError):
    """git ran past its timeout (and was killed)."""


class GitStall(GitError):
    """git was not run: a file it would open would make it wait forever (FIFO, device)."""


@dataclass(frozen=True, slots=True)
class GitResult:
    """What a finished git command gave back."""

    returncode: int
    stdout: bytes
    stderr: bytes


def find_git(env: Mapping[str, str] | None = None) -> str | None:
    """The git executable on the absolute entries of PATH (never ``.`` or an empty entry)."""
    return find_program("git", env)


def git_argv(
    args: Sequence[str],
    *,
    git: str = "git",
    git_dir: Path | None = None,
    work_tree: Path | None = None,
) -> list[str]:
    """The full argv: git, the fixed overrides, the explicit repository, then ``args``."""
    argv = [git, "--no-pager", "--no-replace-objects"]
    for key, value in SAFE_CONFIG:
        argv += ["-c", f"{key}={value}"]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv += _with_diff_flags(args)
    return argv


def _with_diff_flags(args: Sequence[str]) -> list[str]:
    """``args`` with ``--no-ext-diff --no-textconv`` right after a diff-producing subcommand."""
    args = list(args)
    if not args:
        return args
    if args[0] in _DIFF_FAMILY:
        return [args[0], *_NO_DIFF_PROGRAMS, *args[1:]]
    if args[0] in _TEXTCONV_ONLY:
        return [args[0], "--no-textconv", *args[1:]]
    if args[0] == "stash" and len(args) > 1 and args[1] == "show":
        return [*args[:2], *_NO_DIFF_PROGRAMS, *args[2:]]
    return args


def git_env(
    base: Mapping[str, str] | None = None, extra: Sequence[tuple[str, str]] = ()
) -> dict[str, str]:
    """The environment for git: ``base`` minus program-running variables, plus SAFE_ENV and
    ``extra`` config pairs passed as ``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>``."""
    env = dict(os.environ if base is None else base)
    for name in _DROP_ENV:
        env.pop(name, None)
    for name in [n for n in env if n.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del env[name]
    env.update(SAFE_ENV)
    if extra:
        env["GIT_CONFIG_COUNT"] = str(len(extra))
        for i, (key, value) in enumerate(extra):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def driver_overrides(config_names: Sequence[str]) -> list[tuple[str, str]]:
    """Blank every program key of every attribute driver named in ``config_names``."""
    drivers: set[tuple[str, str]] = set()
    for name in config_names:
        section, _, rest = name.partition(".")
        subsection, _, _key = rest.rpartition(".")
        if section in _DRIVER_PROGRAMS and subsection:
            drivers.add((section, subsection))
    pairs: list[tuple[str, str]] = []
    for section, subsection in sorted(drivers):
        for key in _DRIVER_PROGRAMS[section]:
            pairs.append((f"{section}.{subsection}.{key}", ""))
        if section == "filter":
            pairs.append((f"filter.{subsection}.required", "false"))
    return pairs


def _needs_driver_listing(args: Sequence[str]) -> bool:
    if args and args[0] == "cat-file":
        # Raw objects (a checkpoint copies blobs out this way on every file-changing tool
        # call): only --textconv and --filters run a driver; a listing is a process spawned.
        return any(a.startswith(("--textconv", "--filters")) for a in args[1:])
    return not args or args[0] not in _NO_DRIVERS


_LIST_DRIVERS = ["config", "-z", "--name-only", "--get-regexp", r"^(filter|diff|merge)\."]


def _names(stdout: bytes) -> list[str]:
    return [n for n in stdout.decode("utf-8", "surrogateescape").split("\0") if n]


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = True,
    give_up: bool = True,
) -> GitResult:
    """Run ``git <args>`` in ``cwd`` with every repository-chosen program disarmed.

    ``git_dir``/``work_tree`` name the repository explicitly (``--git-dir``/``--work-tree``,
    which also outrank a ``core.worktree`` in the repository's config). ``env`` extends the
    environment (e.g. ``GIT_INDEX_FILE`` for a private index). Raises ``GitError`` when git is
    missing, times out, or (with ``check``) exits non-zero. A timeout of
    :data:`GIVE_UP_AFTER_S` or more keeps agentsh's git out of that repository for the rest of
    the process (``give_up=False``: the caller bounds such commands itself).
    """
    git = find_git()
    if git is None:
        raise GitError("git is not installed (not found on PATH)")
    work_tree, repository = _work_tree(cwd, git_dir, work_tree)
    extra: list[tuple[str, str]] = []
    try:
        if _needs_driver_listing(args):
            listing = git_argv(_LIST_DRIVERS, git=git, git_dir=git_dir, work_tree=work_tree)
            listed = _run(listing, cwd, git_env(), None, timeout)
            extra = driver_overrides(_names(listed.stdout)) if listed.returncode == 0 else []
        argv = git_argv(args, git=git, git_dir=git_dir, work_tree=work_tree)
        done = _run(argv, cwd, _with_own(git_env(None, extra), env), input, timeout)
    except GitTimeout:
        if give_up:
            _give_up(repository, args, timeout)
        raise
    if check and done.returncode != 0:
        raise GitError(_failure(args, done))
    return done


async def arun_git(
    args: Sequence[str],
    *,
    cwd: Path,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - the same signature as run_git
    check: bool = True,
    give_up: bool = True,
) -> GitResult:
    """``run_git`` for the event loop: the same argv and environment, without blocking it."""
    git = find_git()
    if git is None:
        raise GitError("git is not installed (not found on PATH)")
    work_tree, repository = _work_tree(cwd, git_dir, work_tree)
    extra: list[tuple[str, str]] = []
    try:
        if _needs_driver_listing(args):
            listing = git_argv(_LIST_DRIVERS, git=git, git_dir=git_dir, work_tree=work_tree)
            listed = await _arun(listing, cwd, git_env(), None, timeout)
            extra = driver_overrides(_names(listed.stdout)) if listed.returncode == 0 else []
        argv = git_argv(args, git=git, git_dir=git_dir, work_tree=work_tree)
        done = await _arun(argv, cwd, _with_own(git_env(None, extra), env), input, timeout)
    except GitTimeout:
        if give_up:
            _give_up(repository, args, timeout)
        raise
    if check and done.returncode != 0:
        raise GitError(_failure(args, done))
    return done


GIVE_UP_AFTER_S = 10.0  # a timeout at least this long says the repository makes git hang
_GAVE_UP: dict[str, str] = {}  # repository folder -> why agentsh's git stays out of it


def _give_up(repository: str, args: Sequence[str], timeout: float) -> None:
    """git hung on this repository (a FIFO where it reads attributes, a stalled mount): every
    later call would wait as long, so the rest of the process runs no git there."""
    if repository and timeout >= GIVE_UP_AFTER_S:
        _GAVE_UP[repository] = (
            f"git {args[0] if args else ''} did not finish in {timeout:g} s in {repository} "
            "(a file git reads there may never end): agentsh runs no more git there in this run"
        )


def _work_tree(cwd: Path, git_dir: Path | None, work_tree: Path | None) -> tuple[Path | None, str]:
    """The work tree to name: the folder holding the ``.git`` git finds from ``cwd``, unless
    the caller named the repository (a ``core.worktree`` in a cloned repository's config
    would have agentsh's listings and checkpoints cover another folder: ``~``, say).
    GitError when a file git would open there would make it wait forever, or when that
    ``.git`` leads to another folder's repository (:mod:`agentsh.git_pointer`), or git hung
    there before. Also the repository's folder, resolved ("" when none was found)."""
    found = discover(cwd) if git_dir is None else None
    folder = git_dir if git_dir is not None else found[1] if found is not None else None
    repository = os.path.realpath(folder) if folder is not None else ""
    if (gave_up := _GAVE_UP.get(repository)) is not None:
        raise GitStall(gave_up)
    if (stall := stall_reason(cwd, git_dir, found)) is not None:
        raise GitStall(stall)
    if found is not None and (foreign := foreign_repository(*found)) is not None:
        raise GitError(f"{foreign_reason(found[0], foreign)}; agentsh runs none there")
    if work_tree is None and found is not None:
        return found[0], repository
    return work_tree, repository


def _with_own(env: dict[str, str], own: Mapping[str, str] | None) -> dict[str, str]:
    """Put back the caller's own variables (a private ``GIT_INDEX_FILE``, an author) after
    the scrub; never ones that run a program or carry config."""
    for name, value in (own or {}).items():
        if name not in _NEVER_FROM_CALLER and not name.startswith("GIT_CONFIG"):
            env[name] = value
    return env


def _failure(args: Sequence[str], done: GitResult) -> str:
    reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
    last = reason[-1] if reason else f"exit status {done.returncode}"
    return f"git {args[0] if args else ''} failed: {last}"


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], input: bytes | None, timeout: float
) -> GitResult:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
            start_new_session=True,  # no terminal: an include.path of /dev/tty reads nothing
        )
    except subprocess.TimeoutExpired as exc:
        raise GitTimeout(f"git {argv[-1]} timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise GitError(f"git could not be run: {exc.strerror or exc}") from exc
    return GitResult(done.returncode, done.stdout, done.stderr)


async def _arun(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    input: bytes | None,
    timeout: float,  # noqa: ASYNC109
) -> GitResult:
    # Here, not at the top: a command-line run (``memory search``, ``sessions``) that only
    # calls :func:`run_git` would pay asyncio's import (70-150 ms) for nothing.
    import asyncio

    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(f"git could not be run: {exc.strerror or exc}") from exc
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(input), timeout)
    except TimeoutError as exc:
        proc.kill()
        await proc.wait()
        raise GitTimeout(f"git {argv[-1]} timed out after {timeout:g} s") from exc
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    return GitResult(proc.returncode or 0, stdout, stderr)
