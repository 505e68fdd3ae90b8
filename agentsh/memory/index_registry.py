"""One :class:`~agentsh.memory.index.MemoryIndex` per project and process.

The memory tools, the TUI's memory pane and the file watcher share the project's index (one
SQLite connection, one vector matrix, one embedding worker); a front end closes them all with
:func:`close_shared` when it ends. An index whose settings or sources changed is replaced.
"""

from __future__ import annotations

import threading

from agentsh.config import SearchSettings
from agentsh.memory.index import MemoryIndex
from agentsh.memory.index_db import index_db_path
from agentsh.memory.sources import MemorySources
from agentsh.paths import ProjectPaths, UserPaths

_shared: dict[str, MemoryIndex] = {}
_shared_lock = threading.Lock()


def shared_index(
    user: UserPaths,
    project: ProjectPaths,
    settings: SearchSettings,
    *,
    api_base: str | None = None,
    include_project: bool = True,
) -> MemoryIndex:
    """One :class:`MemoryIndex` per project and process (tool, pane and watcher share it).

    Opening does not sync; the first search reconciles.
    """
    key = str(index_db_path(user, project))
    with _shared_lock:
        index = _shared.get(key)
        wanted = MemorySources.for_project(user, project, include_project=include_project)
        if index is None or index.closed or index.settings != settings or index.sources != wanted:
            if index is not None and not index.closed:
                index.close()
            index = MemoryIndex.open(
                user, project, settings, api_base=api_base, include_project=include_project
            )
            _shared[key] = index
        return index


def close_shared() -> None:
    with _shared_lock:
        for index in _shared.values():
            index.close()
        _shared.clear()
