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
        """Where long bash outputs are saved in full."""
        return self.cache_dir / "tool-output"

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
        return self.sessions_dir / project_slug(project_root)

    def session_workspace(self, session_id: str) -> Path:
        return self.workspace_dir / session_id


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


def project_slug(project_root: Path) -> str:
    """A readable, collision-free folder name for a project.

    The readable part alone is lossy (``/a/b-c`` and ``/a-b/c`` look alike), so a short hash of
    the full path is appended; the session header keeps the real ``cwd``.
    """
    resolved = str(project_root.resolve())
    readable = _SLUG_UNSAFE.sub("-", resolved).strip("-")[-60:] or "root"
    digest = hashlib.sha1(resolved.encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"
