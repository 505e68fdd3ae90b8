"""Workspace trust: a project folder's settings, instructions and memory load only once trusted.

Everything in a project folder was possibly written by someone else (a cloned repository). Its
``.agentsh/config.toml`` changes how agentsh behaves, ``AGENTS.md``/``CLAUDE.md`` and
``.agentsh/memory/`` go into the model's system prompt. So, like workspace trust in editors,
the first time agentsh opens a folder holding any of them it says what the folder wants and
asks (the TUI's trust screen; ``-p`` refuses them with a one-line notice unless
``--trust-project``). The answer is stored in the user's data dir with a hash of every file it
covered; a file that changes or appears later asks again. A folder with none of them has
nothing to trust and never asks.

What is covered is a list of *sources*: functions from (project root, working folder) to
:class:`Finding` s, each one file with a one-line description of what it wants. Other rooms add
their own (MCP servers from ``.mcp.json``) with :func:`register_source`. Files are hashed as
they are on disk and never through a link out of the project: such a link is itself a finding
("a link to ~/.ssh/id_ed25519: never followed"), so a planted link is shown, not hidden.

This module is core (no Textual); it knows paths and files, not the settings they hold.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from agentsh.fsutil import LinkRefused, atomic_write, read_beneath, resolve_beneath
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.termsafe import one_line
from agentsh.values import loads_toml

TRUST_FILE_NAME = "trusted-folders.json"
_FORMAT = 1
_HASH_MAX_BYTES = 8 * 1024 * 1024  # a bigger file is hashed on its start and its size
_MAX_MEMORY_FILES = 2000  # a folder of more memory files than this is described, not walked
_MEMORY_HASH_BYTES = 64 * 1024 * 1024  # read of memory files at each start; the rest: listed
CONTEXT_FILE_NAMES = ("AGENTS.md", "CLAUDE.md")


@dataclass(frozen=True, slots=True)
class Finding:
    """One file a project folder holds that would change what agentsh does or tells the model."""

    path: Path  # absolute
    kind: str  # "settings", "instructions", "memory", "mcp", ...
    description: str  # one line, e.g. "changes 3 settings: tools.approval, tui.theme, ..."
    digest: str  # what was seen: a content hash, or where a refused link leads
    # False: agentsh loads nothing of it (a repository's git hooks): it is shown and hashed,
    # and trusted with the rest, but never keeps the folder's settings or memory out.
    loads: bool = True

    def key(self, root: Path) -> str:
        """The name the trust record keeps: project-relative, POSIX."""
        try:
            return self.path.relative_to(root).as_posix()
        except ValueError:
            return self.path.as_posix()


Source = Callable[[Path, Path], list[Finding]]
"""(project root, working folder) -> the findings of one kind."""


class TrustState(StrEnum):
    NOTHING = "nothing"  # no covered file: nothing of the folder's would load anyway
    TRUSTED = "trusted"  # the user trusted exactly these files
    NEW = "new"  # never decided
    CHANGED = "changed"  # trusted once; a covered file changed or appeared since


@dataclass(frozen=True, slots=True)
class TrustCheck:
    """What a folder holds and whether the user has trusted exactly that."""

    root: Path
    findings: tuple[Finding, ...]
    state: TrustState
    changed: tuple[Finding, ...]  # new or different since the stored decision (all when NEW)
    # The user said "not now" to exactly these files (:func:`decline`): not asked again until
    # one of them changes; the front end says so in one line (:meth:`declined_note`).
    declined: bool = False

    @property
    def trusted(self) -> bool:
        return self.state in (TrustState.NOTHING, TrustState.TRUSTED)

    @property
    def asks(self) -> bool:
        """Whether a front end that can ask should: a file to load is not trusted, or
        something new or changed that loads nothing (a git hook) wants trusting, and the
        user has not declined exactly these files already."""
        return (not self.trusted or bool(self.changed)) and not self.declined

    def declined_note(self) -> str:
        """The line a front end shows at start in a folder whose files the user declined."""
        if not self.declined:
            return ""
        names = sorted({one_line(_short_key(f, self.root)) for f in self.changed})
        files = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        what = (
            "its settings, instructions and memory are not loaded"
            if not self.trusted
            else "your allow rules do not cover its git hooks and settings"
        )
        return (
            f"You did not trust this folder ({files}), so {what}. `agentsh trust` asks "
            "again; `agentsh --trust-project` loads it for one run."
        )

    def lines(self, *, limit: int = 12) -> list[str]:
        """One line per finding, at most ``limit`` plus a count: the changed ones first, and
        memory files (there may be hundreds) after the rest, so a folder cannot push its
        settings, servers or instructions out of sight with a pile of notes."""
        ordered = sorted(self.changed, key=_kind_rank) + sorted(
            (f for f in self.findings if f not in self.changed), key=_kind_rank
        )
        shown = [f"{f.key(self.root)}: {f.description}" for f in ordered[:limit]]
        if len(ordered) > limit:
            shown.append(f"... and {len(ordered) - limit} more files")
        return shown

    def notice(self) -> str:
        """The one line ``-p`` prints when it runs without the folder's files."""
        loading = [f for f in self.findings if f.loads]
        kinds = sorted({f.kind for f in loading})
        names = sorted({one_line(_short_key(f, self.root)) for f in loading})
        files = ", ".join(names[:4])
        what = "changed since you trusted it" if self.state is TrustState.CHANGED else "not trusted"
        return (
            f"this folder is {what}, so its {', '.join(kinds)} ({files}) were not loaded; "
            "`agentsh trust` reviews them, or pass --trust-project"
        )


def _kind_rank(finding: Finding) -> int:
    return {"settings": 0, "instructions": 2, "memory": 3}.get(finding.kind, 1)


def _short_key(finding: Finding, root: Path) -> str:
    key = finding.key(root)
    if key.startswith(".agentsh/memory/"):
        return ".agentsh/memory/"
    return key


# -- sources ---------------------------------------------------------------------------------

_SOURCES: list[Source] = []


def register_source(source: Source) -> None:
    """Add a kind of covered file (e.g. ``.mcp.json``); idempotent."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def sources() -> tuple[Source, ...]:
    return tuple(_SOURCES)


def hash_file(root: Path, path: Path) -> tuple[str, bytes | None, str]:
    """(digest, content or None, problem) of a project file read beneath ``root``.

    A link out, a FIFO or a hard-linked file is not read: its digest records what it is, and
    the problem says so in words."""
    try:
        data = read_beneath(root, path, max_bytes=_HASH_MAX_BYTES + 1)
    except LinkRefused as exc:
        target = ""
        with contextlib.suppress(OSError):
            target = str(path.readlink())
        return f"refused:{exc.reason}:{target}", None, exc.explained
    except OSError as exc:
        return f"unreadable:{exc.errno}", None, f"cannot be read ({exc.strerror or exc})"
    if data is None:
        return "missing", None, ""
    digest = hashlib.sha256(data[:_HASH_MAX_BYTES])
    if len(data) > _HASH_MAX_BYTES:
        with contextlib.suppress(OSError):
            digest.update(str(path.stat().st_size).encode())
    return "sha256:" + digest.hexdigest(), data, ""


def _size(data: bytes, path: Path) -> str:
    """The file's size; past what was hashed, its size on disk (a 50 GB AGENTS.md says so)."""
    size = len(data)
    if size > _HASH_MAX_BYTES:
        with contextlib.suppress(OSError):
            size = path.stat().st_size
    if size < 1024:
        return f"{size} B"
    scaled, unit = size / 1024, "KB"
    for bigger in ("MB", "GB", "TB"):
        if scaled < 1024:
            break
        scaled, unit = scaled / 1024, bigger
    return f"{scaled:.1f} {unit}"


def settings_findings(root: Path, cwd: Path) -> list[Finding]:
    """``.agentsh/config.toml``: which settings it changes."""
    path = ProjectPaths(root).config_file
    if not os.path.lexists(path) and not os.path.lexists(path.parent):
        return []
    digest, data, problem = hash_file(root, path)
    if digest == "missing":
        return []
    if data is None:
        return [Finding(path, "settings", f"not loaded: it {problem}", digest)]
    try:
        raw = loads_toml(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return [Finding(path, "settings", "agentsh settings (not valid TOML)", digest)]
    from agentsh.config_project import describe_settings  # only when a project has settings

    return [Finding(path, "settings", describe_settings(raw), digest)]


def instruction_findings(root: Path, cwd: Path) -> list[Finding]:
    """AGENTS.md (else CLAUDE.md) in each folder from the root down to ``cwd``, and any
    CLAUDE.md beside an AGENTS.md (the loader would fall back to it)."""
    found: list[Finding] = []
    for folder in folders_down_to(root, cwd):
        for name in CONTEXT_FILE_NAMES:
            path = folder / name
            if not os.path.lexists(path):
                continue
            digest, data, problem = hash_file(root, path)
            if data is None:
                what = f"not loaded: it {problem}" if problem else "not readable"
            else:
                what = f"instructions for the model ({_size(data, path)})"
            found.append(Finding(path, "instructions", what, digest))
    return found


_MAX_NESTED = 200  # nested instruction files listed (more: one finding says so)


def nested_instruction_findings(root: Path, cwd: Path) -> list[Finding]:
    """The AGENTS.md/CLAUDE.md files git tracks in the other folders of the project: the model
    gets one when it first touches a file under its folder
    (:class:`agentsh.instructions.NestedInstructions`), so they are the folder's instructions
    too and are trusted, or not, with the rest. An untracked one is not listed (finding it
    would mean walking the tree at every start) and loads only with ``--trust-project``."""
    from agentsh.gitutil import GitError, run_git  # gitutil is heavier than this module

    patterns = [f":(glob)**/{name}" for name in CONTEXT_FILE_NAMES]
    try:  # the index only: no ignore pattern is read, nothing the repository names runs
        done = run_git(["ls-files", "-z", "--cached", "--", *patterns], cwd=root, check=False)
    except GitError:
        return []
    if done.returncode != 0:
        return []
    on_the_way = set(folders_down_to(root, cwd))  # instruction_findings has those
    names = sorted(set(done.stdout.decode("utf-8", "surrogateescape").split("\0")) - {""})
    found: list[Finding] = []
    for name in names:
        path = root / name
        if path.parent in on_the_way or not os.path.lexists(path):
            continue
        if len(found) >= _MAX_NESTED:
            many = "too many instruction files to list"
            found.append(Finding(root, "instructions", many, "many"))
            break
        digest, data, problem = hash_file(root, path)
        if data is None:
            what = f"not loaded: it {problem}" if problem else "not readable"
        else:
            folder = path.parent.relative_to(root).as_posix()
            what = f"instructions for the model's work under {folder}/ ({_size(data, path)})"
        found.append(Finding(path, "instructions", what, digest))
    return found


def covered(check: TrustCheck) -> Callable[[Path], bool]:
    """Whether the user's trust covers a project file as it is now: the folder is trusted
    with exactly the files ``check`` saw, and this one is among them, unchanged since."""
    seen = {f.path: f.digest for f in check.findings} if check.state is TrustState.TRUSTED else {}

    def covers(path: Path) -> bool:
        digest = seen.get(path)
        return digest is not None and hash_file(check.root, path)[0] == digest

    return covers


def folders_down_to(root: Path, cwd: Path) -> list[Path]:
    """``root``, then each folder on the way down to ``cwd`` (just ``root`` if cwd is not in it)."""
    root = Path(os.path.realpath(root))
    here = Path(os.path.realpath(cwd))
    folders = [root]
    if here != root and here.is_relative_to(root):
        for part in here.relative_to(root).parts:
            folders.append(folders[-1] / part)
    return folders


def memory_findings(root: Path, cwd: Path) -> list[Finding]:
    """Every file under ``.agentsh/memory/`` (MEMORY.md, docs), links not followed."""
    folder = ProjectPaths(root).memory_dir
    if not os.path.lexists(folder):
        return []
    if folder.is_symlink() and (linked := _linked_folder(root, folder)) is not None:
        return [Finding(folder, "memory", *linked)]
    if folder.is_symlink() or not folder.is_dir():
        digest, _data, problem = hash_file(root, folder)
        target = ""
        with contextlib.suppress(OSError):
            target = str(folder.readlink())
        return [
            Finding(
                folder,
                "memory",
                f"not loaded: it {problem or 'is not a folder'}",
                f"refused:{target or digest}",
            )
        ]
    memo = _memo if _memo is not None and os.path.realpath(folder) == str(folder) else None
    found: list[Finding] = []
    files, read = _memory_files(folder), 0
    for path in files:
        if len(found) >= _MAX_MEMORY_FILES or read > _MEMORY_HASH_BYTES:
            rest = _listing_digest([path, *files])  # loaded too: a change must ask again
            found.append(Finding(folder, "memory", "too many memory files to list", rest))
            break
        remembered = memo.get(path) if memo is not None else None  # (no link to the folder)
        if remembered is not None:
            found.append(Finding(path, "memory", *remembered))
            continue
        if path.is_symlink() and (linked := _linked_folder(root, path)) is not None:
            found.append(Finding(path, "memory", *linked))
            continue
        before = _stamp(path) if memo is not None else None
        digest, data, problem = hash_file(root, path)
        read += len(data or b"")
        if data is None:
            what = f"not loaded: it {problem}" if problem else "not readable"
        else:
            what = "project memory" if path.name == "MEMORY.md" else "memory doc"
            what = f"{what} ({_size(data, path)})"
        found.append(Finding(path, "memory", what, digest))
        if memo is not None and before is not None and data is not None:
            memo.keep(path, before, (what, digest))
    return found


def _linked_folder(root: Path, link: Path) -> tuple[str, str] | None:
    """(what, digest) of a link to a folder of the project, which the memory loader reads
    through (``.agentsh/memory/docs -> ../../shared/docs``): the digest covers the names and
    contents of the files in it, so a change to one asks again as a change to a file would
    (the link's target alone stayed the same). None for a link that is not to a folder
    beneath ``root`` (it loads nothing)."""
    try:
        real = resolve_beneath(root, link)
    except (LinkRefused, OSError):
        return None
    if not real.is_dir():
        return None
    digest = hashlib.sha256(os.fsencode(str(real)) + b"\0")
    files, count, read = _memory_files(real), 0, 0
    for path in files:
        if count >= _MAX_MEMORY_FILES or read > _MEMORY_HASH_BYTES:
            digest.update(_listing_digest([path, *files]).encode())
            break
        hashed, data, _problem = hash_file(root, path)
        count, read = count + 1, read + len(data or b"")
        name = path.relative_to(real).as_posix()
        digest.update(f"{name}\0{hashed}\n".encode("utf-8", "surrogateescape"))
    return f"memory in a linked folder ({count} files)", "sha256:" + digest.hexdigest()


def _listing_digest(paths: list[Path]) -> str:
    """What the files are (name, size, inode, times), none read: any change changes it."""
    digest = hashlib.sha256()
    for path in paths:
        with contextlib.suppress(OSError):
            info = path.lstat()
            stamp = (info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
            digest.update(f"{path}\0{stamp}\n".encode("utf-8", "surrogateescape"))
    return "listing:" + digest.hexdigest()


class _DigestMemo:
    """What :func:`memory_findings` found in a file, for a process that checks the same
    folders again and again (the warm search process): a file whose stamp (device, inode,
    size, modification and change times, one link, regular) is the one it had when it was
    read and hashed is not read again. Any write, replacement, ``touch``, ``chmod`` or new
    hard link changes the change time, which no program can set back; a file changed less than
    :data:`SETTLE_S` before it was read is not kept (a same-size rewrite within one tick of
    the file system's clock would keep its stamp). In memory only, never on disk."""

    SETTLE_S = 2.0
    MAX_FILES = 50_000

    def __init__(self) -> None:
        self._kept: dict[Path, tuple[tuple[int, ...], tuple[str, str]]] = {}

    def get(self, path: Path) -> tuple[str, str] | None:
        kept = self._kept.get(path)
        if kept is None or _stamp(path) != kept[0]:
            return None
        return kept[1]

    def keep(self, path: Path, before: tuple[int, ...], found: tuple[str, str]) -> None:
        settled = before[4] < time.time_ns() - self.SETTLE_S * 1e9
        if settled and _stamp(path) == before:
            if len(self._kept) >= self.MAX_FILES:
                self._kept.clear()
            self._kept[path] = (before, found)


def _stamp(path: Path) -> tuple[int, ...] | None:
    """A regular file's (dev, inode, size, mtime, ctime), without following a link; None
    for anything else (a link, a folder, a file with another name elsewhere)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


_memo: _DigestMemo | None = None


def remember_memory_digests() -> None:
    """Keep what memory files were found to hold, by stamp, in this process from now on
    (:class:`_DigestMemo`): for a long-lived process that checks folders often."""
    global _memo
    if _memo is None:
        _memo = _DigestMemo()


def _memory_files(folder: Path) -> Iterator[Path]:
    """Files under ``folder``, sorted, without agentsh's own lock and temporary files."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        names = sorted(filenames) + sorted(
            d
            for d in dirnames
            if (here / d).is_symlink()  # a linked folder is a finding
        )
        for name in names:
            if name.startswith(".") and name.endswith((".lock", ".tmp")):
                continue
            yield here / name


register_source(settings_findings)
register_source(instruction_findings)
register_source(nested_instruction_findings)
register_source(memory_findings)


def findings(root: Path, cwd: Path | None = None) -> tuple[Finding, ...]:
    root = Path(os.path.realpath(root))
    cwd = cwd if cwd is not None else root
    out: list[Finding] = []
    for source in _SOURCES:
        out.extend(source(root, cwd))
    return tuple(out)


# -- the store -------------------------------------------------------------------------------


def trust_file(user: UserPaths) -> Path:
    return user.data_dir / TRUST_FILE_NAME


def check_project(user: UserPaths, root: Path, cwd: Path | None = None) -> TrustCheck:
    """What ``root`` holds, compared with what the user trusted (if ever). The state is that
    of the files agentsh would load; ``changed`` also names what loads nothing."""
    root = Path(os.path.realpath(root))
    found = findings(root, cwd)
    record = _load(user).get(str(root)) if found else None
    declined = bool(found) and _load(user, "declined").get(str(root), {}).get("files") == {
        f.key(root): f.digest for f in found
    }
    if record is None:
        changed = found
    else:
        seen = record.get("files", {})
        changed = tuple(f for f in found if seen.get(f.key(root)) != f.digest)
    if not any(f.loads for f in found):
        state = TrustState.NOTHING
    elif record is None:
        state = TrustState.NEW
    else:
        state = TrustState.CHANGED if any(f.loads for f in changed) else TrustState.TRUSTED
    return TrustCheck(root, found, state, changed, declined)


def grant(user: UserPaths, check: TrustCheck) -> None:
    """Trust the folder with exactly the files ``check`` saw."""
    files = {f.key(check.root): f.digest for f in check.findings}
    with _store(user) as folders:
        folders[str(check.root)] = {"files": files, "trusted_at": _now()}
    forget_decline(user, check.root)


def decline(user: UserPaths, check: TrustCheck) -> None:
    """Remember "not now" for exactly the files ``check`` saw: the next start does not ask
    again (it says so in one line) until one of them changes or appears."""
    files = {f.key(check.root): f.digest for f in check.findings}
    with _store(user, "declined") as declined:
        declined[str(check.root)] = {"files": files, "declined_at": _now()}


def forget_decline(user: UserPaths, root: Path) -> None:
    """Ask about ``root`` again at the next start (``agentsh trust``)."""
    key = str(Path(os.path.realpath(root)))
    if key in _load(user, "declined"):
        with _store(user, "declined") as declined:
            declined.pop(key, None)


def revoke(user: UserPaths, root: Path) -> None:
    with _store(user) as folders:
        folders.pop(str(Path(os.path.realpath(root))), None)


def record_own_write(user: UserPaths, root: Path, path: Path, before: str = "missing") -> None:
    """agentsh itself wrote ``path`` (a guarded memory write) in a folder it runs trusted: the
    new content is what the user trusts, so the next start does not ask about it; only when
    ``before`` (:func:`hash_file` of it as the write found it; "missing": new) is what the user
    trusted. Someone else's MEMORY.md (the repository's, loaded for one ``--trust-project``
    run; a hand edit; a pull) is not trusted along with agentsh's entry."""
    root = Path(os.path.realpath(root))
    digest, _data, _problem = hash_file(root, path)
    finding = Finding(Path(os.path.realpath(path)), "memory", "", digest)
    if before != "missing":
        seen = _load(user).get(str(root), {}).get("files", {})
        if seen.get(finding.key(root)) != before:
            return
    with _store(user) as folders:
        record = folders.setdefault(str(root), {"files": {}, "trusted_at": _now()})
        files = record.setdefault("files", {})
        if isinstance(files, dict):
            files[finding.key(root)] = digest


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _load(user: UserPaths, kind: str = "folders") -> dict[str, dict[str, dict[str, str]]]:
    """The stored decisions (``kind``: "folders" trusted, "declined"); a missing or damaged
    file is no decision (agentsh asks again)."""
    try:
        raw = json.loads(trust_file(user).read_bytes())
    except (OSError, ValueError):
        return {}
    folders = raw.get(kind) if isinstance(raw, dict) else None
    if not isinstance(folders, dict):
        return {}
    return {
        key: value
        for key, value in folders.items()
        if isinstance(value, dict) and isinstance(value.get("files"), dict)
    }


@contextlib.contextmanager
def _store(user: UserPaths, kind: str = "folders") -> Iterator[dict[str, dict[str, object]]]:
    """The stored decisions of ``kind``, changed under a lock and written back atomically
    with the other kind as it was."""
    path = trust_file(user)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(
        path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
    )
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stored: dict[str, object] = {k: _load(user, k) for k in ("folders", "declined")}
        folders: dict[str, dict[str, object]] = dict(_load(user, kind))  # type: ignore[arg-type]
        yield folders
        stored[kind] = folders
        data = json.dumps({"format": _FORMAT, **stored}, indent=1, sort_keys=True)
        atomic_write(path, (data + "\n").encode("utf-8"), mode=0o600)
    finally:
        os.close(lock)
