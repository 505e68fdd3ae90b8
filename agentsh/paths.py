"""Every location agentsh reads or writes on disk.

User-level folders come from platformdirs (config, data, cache); ``AGENTSH_HOME`` replaces all
three with one folder, which is how tests keep each run apart. Project-level folders live under
``.agentsh/`` in the project root, the nearest enclosing git root or else the current folder.
Nothing here creates a folder: callers create what they write, so a read-only command never
leaves empty folders behind.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "agentsh"
HOME_ENV = "AGENTSH_HOME"


@dataclass(frozen=True, slots=True)
class UserPaths:
    """The three per-user folders and the well-known files inside them."""

    config_dir: Path
    data_dir: Path
    cache_dir: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> UserPaths:
        env = os.environ if env is None else env
        home = env.get(HOME_ENV)
        if home:
            root = Path(home).expanduser().resolve()
            return cls(config_dir=root / "config", data_dir=root / "data", cache_dir=root / "cache")
        import platformdirs  # deferred: not needed for --help or --version

        return cls(
            config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
            data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
            cache_dir=Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
        )

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def themes_dir(self) -> Path:
        return self.config_dir / "themes"

    @property
    def sessions_dir(self) -> Path:
        return self.data_dir / "sessions"

    @property
    def workspace_dir(self) -> Path:
        return self.data_dir / "workspace"

    @property
    def user_memory_dir(self) -> Path:
        return self.data_dir / "memory"

    @property
    def user_memory_file(self) -> Path:
        return self.user_memory_dir / "USER.md"

    @property
    def catalog_db(self) -> Path:
        return self.cache_dir / "catalog.sqlite3"

    @property
    def memory_index_db(self) -> Path:
        return self.cache_dir / "memory-index.sqlite3"

    @property
    def tool_output_dir(self) -> Path:
        """Where long bash and MCP outputs are saved in full, a folder per project."""
        return self.cache_dir / "tool-output"

    def project_tool_output_dir(self, project_root: Path) -> Path:
        """Where one project's long outputs are saved: the model reads its own project's back
        without asking, never another project's unasked (they may hold that project's
        secrets, and a hostile repository could steer the model to them)."""
        return self.tool_output_dir / project_slug(project_root)

    @property
    def mcp_file(self) -> Path:
        """The user's MCP servers, in Claude Code's ``{"mcpServers": {...}}`` format."""
        return self.config_dir / "mcp.json"

    @property
    def mcp_log_dir(self) -> Path:
        """What MCP servers write on stderr, one file per server (never the screen)."""
        return self.cache_dir / "mcp-logs"

    @property
    def mcp_tools_cache(self) -> Path:
        """The tool lists the MCP servers last gave, for counting without starting them."""
        return self.cache_dir / "mcp-tools.json"

    @property
    def ui_state_file(self) -> Path:
        """Small cache of the last model and window, so the first frame can show them."""
        return self.cache_dir / "ui-state.json"

    def project_sessions_dir(self, project_root: Path) -> Path:
        """Where new sessions of the project go: named by its identity (see
        :func:`project_session_folders`), so they follow the project when it moves."""
        return self.sessions_dir / self.project_session_folders(project_root)[0]

    def project_session_folders(self, project_root: Path) -> list[str]:
        return project_session_folders(project_root, self.cache_dir / "project-ids.json")

    @property
    def exports_dir(self) -> Path:
        """Where ``/export`` writes when no file is named: outside any project, so an export
        never lands in a repository's work tree."""
        return self.data_dir / "exports"

    def prompt_history_file(self, project_root: Path) -> Path:
        """The editor's Up/Down history for one project (in the data dir: never written into
        the project folder, where it could be committed)."""
        return self.data_dir / "history" / f"{project_slug(project_root)}.json"

    def session_workspace(self, session_id: str) -> Path:
        """The session's archive folder; the id must be one path part (ValueError)."""
        return self.workspace_dir / checked_session_id(session_id)


@dataclass(frozen=True, slots=True)
class ProjectPaths:
    """The project root and the ``.agentsh/`` folder inside it."""

    root: Path

    @classmethod
    def discover(cls, cwd: Path | None = None) -> ProjectPaths:
        return cls(root=find_project_root(cwd or Path.cwd()))

    @property
    def agentsh_dir(self) -> Path:
        return self.root / ".agentsh"

    @property
    def config_file(self) -> Path:
        return self.agentsh_dir / "config.toml"

    @property
    def mcp_file(self) -> Path:
        """The project's MCP servers (Claude Code's ``.mcp.json``); started only if trusted."""
        return self.root / ".mcp.json"

    @property
    def memory_dir(self) -> Path:
        return self.agentsh_dir / "memory"

    @property
    def memory_file(self) -> Path:
        return self.memory_dir / "MEMORY.md"

    @property
    def docs_dir(self) -> Path:
        return self.memory_dir / "docs"


def find_project_root(cwd: Path) -> Path:
    """The nearest folder at or above ``cwd`` holding ``.git``; ``cwd`` itself if none does."""
    start = cwd.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A session id becomes a file and folder name: one plain path part, never ".." or a separator.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def checked_session_id(session_id: str) -> str:
    """``session_id`` if it is safe as one path part (letters, digits, ``.``, ``_``, ``-``,
    starting with a letter or digit, at most 128 characters); ValueError otherwise. A session
    file's header is someone's input: ``../../x`` there must not become a path."""
    if not _SESSION_ID.fullmatch(session_id) or ".." in session_id:
        raise ValueError(f"not a valid session id: {session_id[:80]!r}")
    return session_id


def project_slug(project_root: Path) -> str:
    """A readable, collision-free folder name for a project.

    The readable part alone is lossy (``/a/b-c`` and ``/a-b/c`` look alike), so a short hash of
    the full path is appended; the session header keeps the real ``cwd``.
    """
    resolved = str(project_root.resolve())
    readable = _SLUG_UNSAFE.sub("-", resolved).strip("-")[-60:] or "root"
    digest = hashlib.sha1(resolved.encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"


def project_session_folders(project_root: Path, cache_file: Path | None = None) -> list[str]:
    """The folder names under ``sessions/`` that hold a project's sessions, newest scheme
    first: ``git-<first commit>`` for a git project with commits (the same after ``mv`` and
    in every worktree of the repository), then the path-based name that older versions used
    (and that a repository without commits or a plain folder still uses)."""
    legacy = project_slug(project_root)
    first = first_commit(project_root.resolve(), cache_file)
    return [f"git-{first[:16]}", legacy] if first else [legacy]


def git_common_dir(root: Path) -> Path | None:
    """The repository folder shared by all worktrees of the repository at ``root``, read from
    ``.git`` itself (a folder, or a worktree's ``gitdir:`` file and its ``commondir``): no
    git process, nothing the repository configures runs."""
    from agentsh.fsutil import read_regular
    from agentsh.git_pointer import foreign_repository

    dot = root / ".git"
    if dot.is_dir():
        git_dir = dot.resolve()
    else:
        # Read only if regular and small: an unpacked archive's .git or commondir may be a
        # FIFO (open() would wait forever, at every start) or a huge file.
        text = (read_regular(dot, _POINTER_BYTES) or b"").decode("utf-8", "replace")
        if not text.startswith("gitdir:"):
            return None
        git_dir = (root / text[len("gitdir:") :].strip()).resolve()
    if foreign_repository(root, git_dir) is not None:
        return None  # another folder's repository: not this project's identity
    common = read_regular(git_dir / "commondir", _POINTER_BYTES)
    if common is None:
        return git_dir
    return (git_dir / common.decode("utf-8", "replace").strip()).resolve()


_POINTER_BYTES = 4096  # a gitdir: or commondir pointer is one path


def first_commit(root: Path, cache_file: Path | None = None) -> str:
    """The oldest root commit of the repository at ``root``; "" when there is none (not a
    repository, no commits yet, git missing). Remembered in ``cache_file`` per repository
    folder (its path and inode, so a repository replaced in place is asked again): git runs,
    through the disarmed runner, once per repository and place, not at every start."""
    common = git_common_dir(root)
    if common is None:
        return ""
    try:
        info = common.stat()
    except OSError:
        return ""
    key = f"{common}:{info.st_dev}:{info.st_ino}"
    cache = _read_cache(cache_file)
    cached = cache.get(key)
    if isinstance(cached, str) and _COMMIT.fullmatch(cached):
        return cached
    from agentsh.gitutil import GitError, run_git

    try:
        done = run_git(["rev-list", "--max-parents=0", "HEAD"], cwd=root, timeout=10, check=False)
    except GitError:
        return ""
    lines = done.stdout.decode("ascii", "replace").split() if done.returncode == 0 else []
    first = lines[-1] if lines and _COMMIT.fullmatch(lines[-1]) else ""
    if first and cache_file is not None:
        cache[key] = first
        _write_cache(cache_file, cache)
    return first


_COMMIT = re.compile(r"[0-9a-f]{40,64}")
_CACHE_ENTRIES = 500


def _read_cache(cache_file: Path | None) -> dict[str, object]:
    if cache_file is None:
        return {}
    import json

    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(cache_file: Path, cache: dict[str, object]) -> None:
    """Best effort (a cache): a failure only means git runs again next time."""
    import json

    from agentsh.fsutil import atomic_write

    items = list(cache.items())[-_CACHE_ENTRIES:]
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache_file, json.dumps(dict(items)).encode("utf-8"))
    except OSError:
        pass
