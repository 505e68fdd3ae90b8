"""Protected paths: the project's ``.agentsh/config.toml``, its ``.mcp.json`` (servers agentsh
starts: programs) and anything under ``.git/``.

So is the folder the repository's ``core.hooksPath`` names inside the project (husky's
``.husky/``): git runs its files as hooks (:func:`hooks_folder`); and so is the file a hook
framework's installed hook reads as its programs (pre-commit's ``.pre-commit-config.yaml``,
lefthook's ``lefthook.yml``: :func:`hook_framework_configs`).

``.agentsh/config.toml`` holds ``tools.approval``: an agent allowed to edit files must not
grant itself commands. ``.git/`` holds the config and hooks that git obeys: a ``core.fsmonitor``,
a hook or an alias written there runs in the user's own next ``git status``, long after
agentsh is gone. So ``write``/``edit`` to them always ask (:mod:`agentsh.tools.approval`).

``bash`` is harder: agentsh cannot know what a command will write. Two measures, neither
complete, and the README says so:

- :func:`protected_command` reads the command text: one that names ``.git/``,
  ``.agentsh/config.toml`` or sets a value with ``git config`` is treated as a write to a
  protected path (asks in every mode, denied in ``-p``). Text can be disguised, so this only
  catches the plain cases.
- :func:`snapshot` / :func:`restore` are a tripwire that does not depend on the text: the
  execution-relevant files (``.agentsh/config.toml``, ``.git/config``, ``config.worktree``,
  ``info/attributes``, every hook, and the same in ``.git/modules/*``) are read before the
  command and compared after it; whatever it changed, created or removed there is put back,
  and the result says so. A process the command leaves running in the background and that
  writes later is not caught.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentsh.fsutil import LinkRefused, atomic_write, read_beneath, resolve_beneath

_MAX_FILE_BYTES = 1024 * 1024
_MAX_FILES = 400

# A command naming .git/ or the project's settings, or setting a git config value.
_PROTECTED_TEXT = re.compile(
    r"(?:^|[\s;&|()'\"=<>`$/])\.git(?:/|\s|$|['\"`;)])"
    r"|\.agentsh/config\.toml|\.mcp\.json\b"
    r"|\bgit\b[^;&|\n]{0,80}?\bconfig\b(?:\s+-{1,2}[\w-]+(?:[= ][^\s-]\S*)?)*?"
    r"\s+(?!-)[\w.-]+\.[\w.-]+\s+(?!-)\S",
    re.IGNORECASE,
)


def _name_key(part: str) -> str:
    """A path component as a case-insensitive file system sees it: NFKC, casefolded, without
    the invisible characters HFS+ ignores (``.g\\u200cit`` is ``.git`` there)."""
    folded = unicodedata.normalize("NFKC", part).casefold()
    return "".join(c for c in folded if unicodedata.category(c) != "Cf")


GIT_REASON = (
    ".git/ (its config and hooks name programs that git runs, in your own git commands too)"
)


def protected_reason(path: Path, root: Path) -> str | None:
    """Why ``path`` (inside ``root``) is protected, in words, or None.

    Compared on the resolved path and name by name, case- and Unicode-insensitively, so a link
    to ``.git``, ``.GIT/config`` on a case-insensitive disk or ``.agentsh/CONFIG.toml`` are
    caught too; and on the path as written, and on where the protected files resolve to, so a
    ``.agentsh`` that is a link to ``conf/`` inside the project protects ``conf/config.toml``
    (the file agentsh loads) as well as ``.agentsh/config.toml``."""
    real_root = root.resolve()
    real = path.resolve()
    written = Path(os.path.normpath(path))
    names: list[tuple[str, ...]] = []
    for candidate, base in ((real, real_root), (written, root), (written, real_root)):
        with contextlib.suppress(ValueError):
            names.append(tuple(_name_key(part) for part in candidate.relative_to(base).parts))
    if not names:
        return None
    if any(".git" in keys for keys in names):
        return GIT_REASON
    for settings, why in _PROTECTED_FILES:
        if any(keys[: len(settings)] == settings for keys in names) or real == Path(
            os.path.realpath(root.joinpath(*settings))
        ):
            return why.format(path=root.joinpath(*settings))
    return None


# Files inside the project that decide what runs without asking: agentsh's project settings
# (tools.approval, [mcp.servers]) and the MCP servers it starts (.mcp.json: any command). A
# model allowed to edit files (--approve edits) must not grant itself commands for the next
# run (a --trust-project run loads them with no question).
_PROTECTED_FILES: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        (".agentsh", "config.toml"),
        "agentsh's project settings ({path}), which decide what tools may do without asking",
    ),
    ((".mcp.json",), "the project's MCP servers ({path}): programs agentsh starts in this folder"),
)


def hooks_folder(root: Path) -> Path | None:
    """The folder the project repository's ``core.hooksPath`` names when it lies inside the
    project (husky's ``.husky/``): git runs its files as hooks, in the user's own commits too,
    so a write there is a write to ``.git/hooks``. None when unset, outside, or no git."""
    from agentsh.gitutil import GitError, run_git

    try:
        done = run_git(
            ["config", "--show-scope", "--get-all", "core.hooksPath"], cwd=root, check=False
        )
    except GitError:
        return None
    values = [
        value
        for scope, _tab, value in (
            line.partition("\t") for line in done.stdout.decode("utf-8", "replace").splitlines()
        )
        if scope != "command"  # agentsh's own -c core.hooksPath=/dev/null
    ]
    if done.returncode != 0 or not values:
        return None
    folder = Path(values[-1]).expanduser()
    folder = Path(os.path.realpath(folder if folder.is_absolute() else root / folder))
    return folder if folder.is_relative_to(Path(os.path.realpath(root))) else None


_INCLUDE_KEYS = r"^include(if\..+)?\.path$"
_MAX_INCLUDES = 20  # config files followed through include.path (more: not protected)


def git_config_places(root: Path) -> list[Path]:
    """Files and folders inside the project, not under a ``.git`` name, that hold settings
    git obeys: the repository's own folder when a ``.git`` file points elsewhere in the
    project (``gitdir: .meta``: its config and hooks are ``.git/``'s), and every config file
    the repository's config includes (``include.path``, ``includeIf.<cond>.path``, whether
    its condition holds now or not, existing or not: a model that writes one sets
    ``core.fsmonitor`` for the user's next ``git status``). Resolved paths."""
    from agentsh.gitutil import GitError, run_git

    real_root = Path(os.path.realpath(root))
    try:
        done = run_git(
            ["rev-parse", "--absolute-git-dir", "--git-common-dir"],
            cwd=root,
            check=False,
        )
    except GitError:
        return []
    if done.returncode != 0:
        return []
    git_dirs = list(
        dict.fromkeys(
            Path(os.path.realpath(root / line))  # the common dir may be relative to root
            for line in done.stdout.decode("utf-8", "surrogateescape").splitlines()
            if line
        )
    )
    places = [d for d in git_dirs if d.is_relative_to(real_root) and not _under_dot_git(d, root)]
    files = [d / name for d in git_dirs for name in ("config", "config.worktree")]
    seen: set[Path] = set()
    while files and len(seen) < _MAX_INCLUDES:
        config = files.pop(0)
        if config in seen or not config.is_file():
            continue
        seen.add(config)
        try:
            listed = run_git(
                [
                    *("config", "--file", str(config), "--no-includes", "-z"),
                    "--get-regexp",
                    _INCLUDE_KEYS,
                ],
                cwd=root,
                check=False,
            )
        except GitError:
            continue
        for item in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
            _key, _newline, value = item.partition("\n")
            if not value:
                continue
            target = Path(value).expanduser()
            target = Path(os.path.realpath(config.parent / target))
            if target.is_relative_to(real_root):
                if not _under_dot_git(target, root):
                    places.append(target)
                files.append(target)
    return list(dict.fromkeys(places))


def _under_dot_git(path: Path, root: Path) -> bool:
    return protected_reason(path, root) == GIT_REASON


def git_config_reason(path: Path, places: list[Path]) -> str | None:
    """Why writing ``path`` changes settings git obeys (see :func:`git_config_places`)."""
    real = Path(os.path.realpath(path))
    place = next((p for p in places if real == p or real.is_relative_to(p)), None)
    if place is None:
        return None
    return (
        f"git's own settings ({place} is where this repository's git reads its config, "
        "hooks or included config; they name programs git runs, in your own git commands too)"
    )


def hooks_reason(path: Path, folder: Path | None) -> str | None:
    """Why writing ``path`` changes a hook git runs (see :func:`hooks_folder`), or None."""
    if folder is None or not Path(os.path.realpath(path)).is_relative_to(folder):
        return None
    return (
        f"the git hooks folder this repository's core.hooksPath names ({folder}): git runs "
        "its files, in your own git commands too"
    )


def git_settings_reason(targets: Sequence[Path], root: Path) -> str | None:
    """Why writing one of ``targets`` changes what git runs: the hooks folder
    ``core.hooksPath`` names, the list of programs a hook framework's hook reads
    (:func:`hook_framework_configs`), else another place of git's settings; None when none
    (git is asked only here, so only for a call that writes files). Blocking: run it in a
    thread."""
    folder = hooks_folder(root)
    if found := next((why for p in targets if (why := hooks_reason(p, folder))), None):
        return found
    configs = hook_framework_configs(root, folder)
    for target in targets:
        if (real := Path(os.path.realpath(target))) in configs:
            return (
                f"the programs this repository's git hook {configs[real]} runs "
                f"({real.name}), in your own git commits too"
            )
    places = git_config_places(root)
    return next((why for p in targets if (why := git_config_reason(p, places))), None)


# A hook installed by pre-commit (https://pre-commit.com) runs what ``--config`` names (by
# default .pre-commit-config.yaml: ``repo: local`` hooks are any command); lefthook's runs
# what lefthook.yml lists. Writing that file is writing the hook.
_PRE_COMMIT_MARK = b"File generated by pre-commit"
_PRE_COMMIT_CONFIG = re.compile(rb"--config[= ]['\"]?([^\s'\")]+)")
_LEFTHOOK_FILES = [f"{dot}lefthook{kind}" for dot in ("", ".") for kind in (".yml", ".yaml")]
_LEFTHOOK_FILES += [f"{dot}lefthook-local.yml" for dot in ("", ".")]


def framework_files(hook: bytes) -> list[str]:
    """The files (relative to the top of the work tree) that a hook with this content runs as
    its list of commands: pre-commit's config, lefthook's; [] for any other hook."""
    files: list[str] = []
    if _PRE_COMMIT_MARK in hook:
        named = _PRE_COMMIT_CONFIG.search(hook)
        files.append(named.group(1).decode("utf-8", "replace") if named else "")
        files[-1] = files[-1] or ".pre-commit-config.yaml"
    if b"lefthook" in hook:
        files += _LEFTHOOK_FILES
    return files


def hook_framework_configs(root: Path, folder: Path | None = None) -> dict[Path, str]:
    """The files inside the project that a hook framework's hook in this repository reads as
    the programs to run (resolved path -> the hook's name): pre-commit's
    ``.pre-commit-config.yaml`` (or its ``--config``), lefthook's ``lefthook.yml``. ``folder``:
    the hooks folder ``core.hooksPath`` names (:func:`hooks_folder`), else ``.git/hooks``."""
    real_root = Path(os.path.realpath(root))
    hooks = folder or real_root / ".git" / "hooks"
    if not hooks.is_dir() or hooks.is_symlink():
        return {}
    found: dict[Path, str] = {}
    try:
        names = sorted(p for p in hooks.iterdir() if not p.name.endswith(".sample"))[:50]
    except OSError:
        return {}
    for hook in names:
        try:
            data = read_beneath(real_root, hook, max_bytes=64 * 1024, single_link=False)
        except (LinkRefused, OSError):
            continue
        for name in framework_files(data or b""):
            config = Path(os.path.realpath(real_root / name))
            if config.is_relative_to(real_root):
                found.setdefault(config, hook.name)
    return found


def protected_command(command: str) -> str | None:
    """What protected path a shell command visibly writes or names, in words, or None."""
    found = _PROTECTED_TEXT.search(command)
    if found is None:
        return None
    if ".agentsh" in found.group().lower():
        return "agentsh's project settings (.agentsh/config.toml)"
    if ".mcp.json" in found.group().lower():
        return "the project's MCP servers (.mcp.json)"
    return GIT_REASON


# -- the tripwire ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The protected files of a project as they were: relative path -> (bytes, mode). A name
    that is a link or not a plain file is kept with mode -1 and what it pointed at."""

    root: Path
    files: dict[str, tuple[bytes, int]]


def _watched(root: Path) -> list[Path]:
    """The files whose change makes git (or agentsh) run something else."""
    paths = [root / ".agentsh" / "config.toml", root / ".mcp.json"]
    git_dirs = [root / ".git"]
    for place in git_config_places(root):  # a "gitdir:" folder, included config files
        if place.is_dir() and not place.is_symlink():
            git_dirs.append(place)
        elif place.is_relative_to(root):
            paths.append(place)
    modules = root / ".git" / "modules"
    if modules.is_dir() and not modules.is_symlink():
        with contextlib.suppress(OSError):
            git_dirs += [m for m in sorted(modules.iterdir()) if m.is_dir()][:50]
    for git in git_dirs:
        if not git.is_dir() or git.is_symlink():
            continue
        paths += [git / "config", git / "config.worktree", git / "info" / "attributes"]
        paths += _hook_files(git / "hooks")
    # The hooks folder core.hooksPath names inside the project (.husky/), and what a hook
    # framework's hook runs (.pre-commit-config.yaml): the user's next commit runs them.
    # (git is asked only when the repository's own config files name a hooksPath at all)
    folder = hooks_folder(root) if _names_hooks_path(root, paths) else None
    if folder is not None:
        paths += _hook_files(folder)
    paths += sorted(hook_framework_configs(root, folder))
    return list(dict.fromkeys(paths))[:_MAX_FILES]


def _names_hooks_path(root: Path, paths: list[Path]) -> bool:
    """Whether one of the repository's own config files (``config``, ``config.worktree``, an
    included one) mentions ``hooksPath``: only then is git asked where the hooks are."""
    for path in paths:
        if path.name in ("config", "config.worktree") or path.parent.name != "hooks":
            try:
                data = read_beneath(root, path, max_bytes=_MAX_FILE_BYTES, single_link=False)
            except (LinkRefused, OSError):
                continue
            if data is not None and b"hookspath" in data.lower():
                return True
    return False


def _hook_files(hooks: Path) -> list[Path]:
    if not hooks.is_dir() or hooks.is_symlink():
        return []
    with contextlib.suppress(OSError):
        return sorted(p for p in hooks.iterdir() if not p.name.endswith(".sample"))
    return []


def snapshot(root: Path) -> Snapshot:
    """Read the protected files (never through a link out of the project)."""
    root = Path(os.path.realpath(root))
    files: dict[str, tuple[bytes, int]] = {}
    for path in _watched(root):
        name = path.relative_to(root).as_posix()
        try:
            info = path.lstat()
        except OSError:
            continue
        try:
            data = read_beneath(root, path, max_bytes=_MAX_FILE_BYTES, single_link=False)
        except (LinkRefused, OSError):
            data = None
        if data is None or path.is_symlink():
            target = ""
            with contextlib.suppress(OSError):
                target = str(path.readlink())
            files[name] = (f"<not a plain file: {target}>".encode(), -1)
        else:
            files[name] = (data, stat.S_IMODE(info.st_mode))
    return Snapshot(root, files)


def restore(before: Snapshot) -> list[str]:
    """Put back what changed since ``before``; the relative paths that were restored."""
    after = snapshot(before.root)
    changed = sorted(
        name
        for name in set(before.files) | set(after.files)
        if before.files.get(name) != after.files.get(name)
    )
    undone: list[str] = []
    for name in changed:
        path = before.root / name
        old = before.files.get(name)
        try:
            if path.is_symlink() or (path.exists() and not path.is_file()):
                path.unlink()
            if old is None:
                path.unlink(missing_ok=True)
            elif old[1] >= 0:
                # Through a link inside the project (.agentsh -> conf): its target is the file
                # that changed, and the write refuses a link on the way.
                if not path.is_symlink() and os.path.lexists(path.parent):
                    path = resolve_beneath(before.root, path)
                atomic_write(path, old[0], mode=old[1], root=before.root)
            else:
                continue  # it was a link before: not ours to recreate
        except OSError:
            continue
        undone.append(name)
    return undone
