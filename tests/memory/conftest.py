"""Fixtures for the memory search tests: paths, a small deterministic embedder, an index factory."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentsh.config import SearchSettings
from agentsh.memory.embeddings import EmbeddingError, EmbeddingUnavailable, normalize_rows
from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths

_WORDS = re.compile(r"\w+")


class HashEmbedder:
    """Bag of words hashed into 64 signed buckets: texts sharing words get similar vectors.

    Deterministic and instant, so unit tests can check ranking and caching without the real
    model; it counts what it embeds so tests can prove a chunk is never embedded twice.
    """

    dims = 64
    enabled = True

    def __init__(
        self, model_id: str = "test/hash-64", *, multilingual: bool = False, fail: str = ""
    ) -> None:
        self.model_id = model_id
        self.multilingual = multilingual
        self.fail = fail  # "unavailable" or "error": every call fails that way
        self.embedded: list[str] = []
        self.calls = 0
        self.gate: threading.Event | None = None  # when set, embed waits for it

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail == "unavailable":
            raise EmbeddingUnavailable("test model cannot load")
        if self.fail == "error":
            raise EmbeddingError("test provider is down")
        self.embedded.extend(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORDS.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                bucket = int.from_bytes(digest[:3], "little") % self.dims
                out[row, bucket] += 1.0 if digest[3] & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return normalize_rows(out)


@pytest.fixture
def paths(project: Path, agentsh_home: Path) -> tuple[UserPaths, ProjectPaths]:
    return UserPaths.from_env(), ProjectPaths(project)


@pytest.fixture
def memory_dir(paths: tuple[UserPaths, ProjectPaths]) -> Path:
    folder = paths[1].memory_dir
    folder.mkdir(parents=True, exist_ok=True)
    return folder


IndexFactory = Callable[..., MemoryIndex]


@pytest.fixture
def make_index(paths: tuple[UserPaths, ProjectPaths]) -> Iterator[IndexFactory]:
    """Open indexes on the test's project; every one is closed at the end."""
    opened: list[MemoryIndex] = []

    def factory(embedder: Any = None, *, background: bool = False, **search: Any) -> MemoryIndex:
        user, project = paths
        settings = replace(SearchSettings(), **search)
        index = MemoryIndex.open(
            user,
            project,
            settings,
            embedder=embedder if embedder is not None else HashEmbedder(),
            background=background,
        )
        opened.append(index)
        return index

    yield factory
    for index in opened:
        index.close()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def add_session(user: UserPaths, project: ProjectPaths, session_id: str) -> Path:
    """A session log file of this project, so its workspace summaries count as sources."""
    folder = user.project_sessions_dir(project.root)
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"20250101T000000Z_{session_id}.jsonl"
    log.write_text('{"type":"session","version":1}\n', encoding="utf-8")
    workspace = user.session_workspace(session_id)
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace
