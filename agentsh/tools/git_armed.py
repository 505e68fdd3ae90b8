"""What in a repository makes the user's own git commands run programs it names.

An allow rule such as ``Bash(git:*)`` lets the model run git commands without asking; the user
wrote it thinking of git. But a repository delivered as an archive (not cloned: a clone never
copies them) can carry executable ``.git/hooks/*`` and a ``.git/config`` that names programs:
``core.fsmonitor`` (run by ``git status``), ``core.hooksPath``, ``core.sshCommand``, aliases
(``!sh ...``), filter and diff drivers, credential helpers, an ``include.path`` that pulls in
any of these, a remote that is a repository on this machine (a push runs its hooks). Then
``git commit`` runs the repository's ``pre-commit``: code the user never approved.
:func:`armed_reason` says, in one line, what a repository carries of that kind, so
the approval layer can ask (or, in ``-p``, deny) instead of letting the rule cover the command.

Only the repository's own configuration counts (``local`` and ``worktree`` scope, with what
they include): the user's global and system settings are theirs. agentsh's own git calls are
disarmed (:mod:`agentsh.gitutil`) and need none of this.

The project's own repository is also one of the things a folder is trusted with
(:mod:`agentsh.trust`, :func:`register`): its hooks and settings are listed on the trust
screen and hashed with their content (:attr:`Armed.digest`). Once the user trusts the folder
(or passes ``--trust-project`` for a run) an allow rule covers them as they were then
(:func:`trusted_programs`); a hook that changes later is new and asks again. They load nothing,
so they never keep the folder's settings, instructions or memory out (``Finding.loads``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from agentsh.config import Environment
from agentsh.git_pointer import foreign_reason, foreign_repository
from agentsh.git_stalls import discover
from agentsh.gitutil import GitError, GitStall, GitTimeout, run_git
from agentsh.tools.protected import framework_files
from agentsh.trust import Finding, register_source

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
    r"|submodule\..+\.update|commit\.template"
    r"|core\.alternaterefscommand|tar\..+\.command|imap\.tunnel|interactive\.difffilter",
    re.IGNORECASE,
)
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_MAX_HOOKS = 200  # files of a hooks folder looked at (more: not checked, counts as a hook)
_MAX_SCANNED = 100_000  # entries of a hooks folder read at all
_MAX_MODULES = 20  # submodules looked at
_SHOWN = 3  # names quoted in the reason; the rest are counted
_MAX_HOOK_BYTES = 1024 * 1024  # of a hook's content in the digest


@dataclass(frozen=True, slots=True)
class Armed:
    """What a repository makes git run: names for the user, and a digest of the programs
    themselves (each hook's content, each setting's value), so trusting them covers exactly
    these and a change is new."""

    items: tuple[str, ...]  # "hook pre-commit", "setting core.fsmonitor", "submodule a: ..."
    digest: str
    foreign: str = ""  # why the repository is another folder's (then the one item)

    def reason(self) -> str:
        """In one line, for an approval prompt or a denial."""
        if self.foreign:
            return self.foreign
        shown = ", ".join(self.items[:_SHOWN])
        more = f" and {len(self.items) - _SHOWN} more" if len(self.items) > _SHOWN else ""
        return f"this repository's git runs programs it names ({shown}{more})"


def armed_reason(cwd: Path) -> str | None:
    """:meth:`Armed.reason` of :func:`armed_programs`; None when nothing."""
    armed = armed_programs(cwd)
    return armed.reason() if armed is not None else None


def armed_programs(cwd: Path, *, timeout: float = 5.0) -> Armed | None:
    """What the repository a git command in ``cwd`` would use carries that runs programs
    (hooks, program-naming settings, also of its submodules, which ``git status`` and a
    recursive checkout enter); None when nothing (or no repository). ``timeout``: for each
    git call (a configuration git cannot read in time counts as carrying programs)."""
    if (foreign := foreign_armed(cwd)) is not None:
        return foreign
    found = _Found()
    try:
        common = run_git(["rev-parse", "--git-common-dir"], cwd=cwd, timeout=timeout, check=False)
        folder = common.stdout.decode("utf-8", "surrogateescape").strip()
        git_dir = cwd / folder if common.returncode == 0 and folder else None
        bare = _BARE.search(common.stderr.decode("utf-8", "surrogateescape"))
        if bare is not None:
            # agentsh's own git uses a bare repository only when named; the user's git finds
            # one in the folder (or above it) and obeys its config and hooks.
            git_dir = Path(bare.group(1))
            _armed(found, cwd, git_dir, git_dir, "", timeout)
        else:
            _armed(found, cwd, None, git_dir, "", timeout)
        if git_dir is not None:
            modules = _modules(git_dir)
            for module in modules[:_MAX_MODULES]:
                name = module.relative_to(git_dir / "modules").as_posix()
                _armed(found, cwd, module, module, f"submodule {name}: ", timeout)
            if len(modules) > _MAX_MODULES:
                found.unchecked(f"more than {_MAX_MODULES} submodules (not checked)")
    except (GitTimeout, GitStall):
        # A configuration git cannot read in time, or would wait on for good (an include.path
        # naming a FIFO, which agentsh's git now refuses to open): what it would make the
        # user's git run is unknown, so it counts, and is never covered without asking.
        found.unchecked("settings git could not read in time (not checked)")
    except GitError:
        return None  # no git: the command fails as well
    if not found.items:
        return None
    return Armed(tuple(found.items), "sha256:" + found.digest.hexdigest())


def foreign_armed(cwd: Path) -> Armed | None:
    """The repository git would use from ``cwd`` when it is another folder's (an archive's
    ``.git`` saying ``gitdir: ~/work/private/.git``): a rule for git commands must not let
    them change it unasked (:mod:`agentsh.git_pointer`). Seen without running git (agentsh's
    own git refuses such a repository)."""
    found = discover(cwd)
    foreign = foreign_repository(*found) if found is not None else None
    if found is None or foreign is None:
        return None
    digest = hashlib.sha256(os.fsencode(foreign)).hexdigest()
    item = f"the repository of another folder ({foreign})"
    return Armed((item,), f"sha256:{digest}", foreign_reason(found[0], foreign))


class _Found:
    """What :func:`_armed` collects: the names, and a hash of what they run."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.digest = hashlib.sha256()

    def add(self, item: str, content: bytes) -> None:
        self.items.append(item)
        for part in (item.encode("utf-8", "surrogateescape"), content):
            self.digest.update(len(part).to_bytes(8, "big") + part)

    def unchecked(self, item: str) -> None:
        """Something too big to look through (an attacker would hide a hook behind it): it
        counts, and its digest is new every time, so no trust or session answer covers it."""
        self.add(item, secrets.token_bytes(16))


_BARE = re.compile(r"cannot use bare repository '(.+?)' \(safe\.bareRepository")


def _armed(
    found: _Found,
    cwd: Path,
    git_dir: Path | None,
    hooks_of: Path | None,
    prefix: str,
    timeout: float,
) -> None:
    """The hooks (in ``hooks_of``) and program settings of one repository (``git_dir``: a
    submodule's or a bare one; None: the one git finds from ``cwd``), into ``found``."""
    listed = run_git(
        ["config", "--list", "--show-scope", "-z"],
        cwd=cwd,
        git_dir=git_dir,
        timeout=timeout,
        check=False,
    )
    settings, own_hooks = _program_keys(listed.stdout) if listed.returncode == 0 else ({}, False)
    if prefix:  # a submodule's config names its work tree: that is how they work
        settings = {k: v for k, v in settings.items() if k.lower() != "core.worktree"}
    # git runs the hooks of the folder core.hooksPath names instead (below), if one is set.
    moved = not prefix and any(key.lower() == "core.hookspath" for key in settings)
    if hooks_of is not None and not own_hooks and not moved:
        top = hooks_of.parent if not prefix and hooks_of.name == ".git" else None
        _add_hooks(found, hooks_of / "hooks", prefix, "", top)
    for key, value in settings.items():
        if _pushes_to_a_folder_here(key, value):
            if not prefix:
                _push_target(found, cwd, value)
            continue
        found.add(f"{prefix}setting {key}", value.encode("utf-8", "surrogateescape"))
        if key.lower() == "core.hookspath" and not prefix:
            # The hooks live where the setting says (often tracked files: .husky/): what
            # they run is in the digest, so a pull that changes them is new.
            folder, top = _hooks_path(value, cwd, timeout)
            _add_hooks(found, folder, "", f" ({value})", top)


def _add_hooks(
    found: _Found, folder: Path, prefix: str, where: str, top: Path | None = None
) -> None:
    """The hooks of ``folder``; with ``top`` (the work tree), also the config a hook
    framework's hook runs as its commands (pre-commit's ``.pre-commit-config.yaml``): a pull
    that changes it changes what the hook runs, as a changed hook would."""
    hooks = _active_hooks(folder)
    if hooks is None:
        found.unchecked(f"{prefix}hooks{where}: more than {_MAX_HOOKS} files (not checked)")
        return
    for name in hooks:
        content = _content(folder / name)
        found.add(f"{prefix}hook {name}{where}", content)
        if top is None:
            continue
        for config in framework_files(content):
            if (top / config).is_file():
                found.add(f"{prefix}hook {name}{where} runs {config}", _content(top / config))


def _hooks_path(value: str, cwd: Path, timeout: float) -> tuple[Path, Path]:
    """Where a ``core.hooksPath`` points (relative to the top of the work tree), and the top."""
    top = run_git(["rev-parse", "--show-toplevel"], cwd=cwd, timeout=timeout, check=False)
    base = top.stdout.decode("utf-8", "surrogateescape").strip() if top.returncode == 0 else ""
    path = Path(value).expanduser()
    return (path if path.is_absolute() else Path(base or cwd) / path), Path(base or cwd)


def _content(path: Path) -> bytes:
    """A hook's bytes as git would run them (through a link), bounded."""
    try:
        with open(path, "rb") as handle:
            return handle.read(_MAX_HOOK_BYTES)
    except OSError as exc:
        return f"unreadable:{exc.errno}".encode()


def _modules(git_dir: Path) -> list[Path]:
    """The submodules' repositories under ``git_dir/modules`` (nested ones too), a few: one
    more than :data:`_MAX_MODULES` says there are too many to look through."""
    found: list[Path] = []
    pending = [git_dir / "modules"]
    while pending and len(found) <= _MAX_MODULES:
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
    return found[: _MAX_MODULES + 1]


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


def _program_keys(output: bytes) -> tuple[dict[str, str], bool]:
    """The repository-scope keys among ``git config --list --show-scope -z`` entries that
    name programs, in order, each once, with their (last) values; and whether the user's own
    settings point git at hooks of their own (``core.hooksPath``), so that the repository's
    are not run."""
    fields = output.decode("utf-8", "surrogateescape").split("\0")
    keys: dict[str, str] = {}
    own_hooks = False
    for scope, entry in zip(fields[::2], fields[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if scope in _REPOSITORY_SCOPES and (
            _PROGRAM_KEYS.fullmatch(key) or _pushes_to_a_folder_here(key, value)
        ):
            keys[key] = value
        elif scope in ("system", "global") and key.lower() == "core.hookspath":
            own_hooks = True
    return keys, own_hooks


_REMOTE_URL = re.compile(r"remote\..+\.(?:push)?url", re.IGNORECASE)
# What a push runs in the repository it pushes to (receive-pack's hooks).
_RECEIVE_HOOKS = frozenset(
    {"pre-receive", "update", "post-receive", "post-update", "push-to-checkout",
     "reference-transaction", "proc-receive"}
)  # fmt: skip


def _pushes_to_a_folder_here(key: str, value: str) -> bool:
    """Whether ``key`` is a remote's URL naming a folder on this machine (``url =
    ./vendor/cache.git``, or the absolute path a clone came from): a push runs that
    repository's receive hooks (:func:`_push_target`)."""
    if not _REMOTE_URL.fullmatch(key):
        return False
    if value.startswith("file:"):
        return True
    if "://" in value or "::" in value:
        return False
    colon, slash = value.find(":"), value.find("/")
    return not (colon >= 0 and (slash < 0 or colon < slash))  # host:path is ssh


def _push_target(found: _Found, cwd: Path, url: str) -> None:
    """The receive hooks of the repository a remote's ``url`` names on this machine, into
    ``found``: a cloned repository can carry one as tracked files (``vendor/cache.git``, its
    hooks executable), and ``git clone vendor/cache.git c`` then ``cd c && git push`` ran
    them. Its ``core.hooksPath`` (hooks elsewhere) counts as not checked."""
    path = url.removeprefix("file:").removeprefix("//") if url.startswith("file:") else url
    target = cwd / Path(path).expanduser()
    git_dir = target / ".git" if (target / ".git").is_dir() else target
    if not (git_dir / "HEAD").is_file():
        return  # no repository there: the push fails
    where = f"push target {url}: "
    try:
        config = (git_dir / "config").read_bytes()[:_MAX_HOOK_BYTES]
    except OSError:
        config = b""
    if b"hookspath" in config.lower():
        found.unchecked(f"{where}hooks elsewhere (core.hooksPath)")
    hooks = _active_hooks(git_dir / "hooks")
    if hooks is None:
        found.unchecked(f"{where}more than {_MAX_HOOKS} files in its hooks folder (not checked)")
        return
    for name in hooks:
        if name in _RECEIVE_HOOKS:
            found.add(f"{where}hook {name}", _content(git_dir / "hooks" / name))


def _active_hooks(folder: Path) -> list[str] | None:
    """The hooks git would run from ``folder``: executable files (or links to one) not named
    ``*.sample``, sorted; None when it holds more than :data:`_MAX_HOOKS` other files (only
    the first ones were looked at before, and a hook sorted after them ran unseen)."""
    names: list[str] = []
    try:
        with os.scandir(folder) as listing:
            entries = list(itertools.islice(listing, _MAX_SCANNED))
    except OSError:
        return []
    entries = sorted((e for e in entries if not e.name.endswith(".sample")), key=_name)
    if len(entries) > _MAX_HOOKS:
        return None
    for entry in entries:
        try:
            info = entry.stat()  # a link counts as what it leads to, as for git
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_mode & 0o111:
            names.append(entry.name)
    return names


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


# -- the project's repository in the trust decision ------------------------------------------

KIND = "git programs"
_LISTED = 8  # names on the trust screen's line; the rest are counted
# A word of each key of _PROGRAM_KEYS (a section header with its "["; submodule.*.update is
# in [submodule], commit.template in [commit]): a .git/config holding none of them, without
# whitespace and lowercased, names no program.
_ARMING_WORDS = (
    b"hookspath", b"fsmonitor", b"sshcommand", b"pager", b"editor", b"askpass", b"gitproxy",
    b"attributesfile", b"worktree", b"external", b"command", b"textconv", b"driver", b"filter",
    b"[gpg", b"credential", b"alias", b"include", b"uploadpack", b"receivepack", b"vcs",
    b"[difftool", b"[mergetool", b"[man", b"browser", b"sendemail", b"variant", b"[protocol",
    b"[url", b"[submodule", b"[commit",
)  # fmt: skip
_MAX_CONFIG_BYTES = 256 * 1024
_TRUST_CHECK_TIMEOUT_S = 2.0


def git_findings(root: Path, cwd: Path) -> list[Finding]:
    """The project repository's hooks and program settings, as one finding whose digest is
    what they run; none for a repository that carries nothing (most: seen without git)."""
    if not os.path.lexists(root / ".git"):
        return []
    if (foreign := foreign_armed(root)) is not None:
        what = f"{foreign.foreign} (trusted, an allow rule such as Bash(git:*) covers them)"
        return [Finding(root / ".git", KIND, what, foreign.digest, loads=False)]
    if _plainly_unarmed(root / ".git"):
        return []
    armed = armed_programs(root, timeout=_TRUST_CHECK_TIMEOUT_S)  # at every start: short
    if armed is None:
        return []
    shown = ", ".join(armed.items[:_LISTED])
    more = f" and {len(armed.items) - _LISTED} more" if len(armed.items) > _LISTED else ""
    what = (
        f"git runs programs it names: {shown}{more} (trusted, an allow rule such as "
        "Bash(git:*) covers them)"
    )
    return [Finding(root / ".git", KIND, what, armed.digest, loads=False)]


def _plainly_unarmed(git: Path) -> bool:
    """Whether a ``.git`` folder (or a linked work tree's ``.git`` file) plainly makes git run
    nothing: no active hook, no submodule, no worktree config, and small configs without a
    word any program key holds. Anything else (a link, something unreadable or unexpected) is
    left to :func:`armed_programs`, which asks git."""
    try:
        mode = os.lstat(git).st_mode
        if stat.S_ISREG(mode):  # a linked work tree: "gitdir: <common>/worktrees/<name>"
            line = _small(git).decode("utf-8", "surrogateescape").strip()
            if not line.startswith("gitdir: ") or "\n" in line:
                return False
            private = git.parent / line.removeprefix("gitdir: ")
            pointer = _small(private / "commondir").decode("utf-8", "surrogateescape").strip()
            common = private / pointer
            folders = [private, common]
        elif stat.S_ISDIR(mode):
            common = git
            folders = [git]
        else:
            return False
        if any(os.path.lexists(f / name) for f in folders for name in ("config.worktree",)):
            return False
        if os.path.lexists(common / "modules"):
            return False
        text = re.sub(rb"\s+", b"", _small(common / "config")).lower()
    except (OSError, ValueError):
        return False
    return _active_hooks(common / "hooks") == [] and not any(w in text for w in _ARMING_WORDS)


def _small(path: Path) -> bytes:
    """A small regular file's bytes (not through a link); OSError/ValueError otherwise."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_CONFIG_BYTES:
        raise ValueError(path)
    return path.read_bytes()


def trusted_programs(env: Environment) -> str | None:
    """The digest of the project repository's programs an allow rule may run in this run:
    as the trust check saw them, when the user's stored trust covers exactly them or
    ``--trust-project`` trusts the folder as it is; None otherwise."""
    finding = next((f for f in env.trust.findings if f.kind == KIND), None)
    if finding is None or not env.trusted:
        return None
    if finding in env.trust.changed and not env.trust_project:
        return None
    return finding.digest


def register() -> None:
    """Make the trust check see the project repository's programs (idempotent; cli.main
    calls it first)."""
    register_source(git_findings)


register()
