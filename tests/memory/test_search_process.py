"""What ``agentsh memory search`` as a new process is spared (issue 16): the saved vector matrix
replaces the database join and the "any vector missing?" query, the model's checksum is not
recomputed for the same file, and the index does not load the injection guard. Results stay
those of the database."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsh.memory import embeddings
from agentsh.memory.embeddings import EmbeddingUnavailable
from agentsh.memory.index import MemoryIndex
from agentsh.memory.index_db import IndexStore
from tests.memory.conftest import HashEmbedder, IndexFactory, write


def _notes(memory_dir: Path) -> Path:
    for topic in ("helm deploys", "redis cache expiry", "stripe webhook retries"):
        body = "\n".join(f"{topic}: fact {i} about the pipeline" for i in range(40))
        write(memory_dir / f"{topic.split()[0]}.md", body)
    return memory_dir / "redis.md"


def _ranked(index: MemoryIndex, query: str) -> list[tuple[str, int, float]]:
    response = index.search(query)
    return [(r.path, r.start_line, round(r.score, 6)) for r in response.results]


def _no_join(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    def vectors(_store: IndexStore, _model: str) -> list[tuple[int, bytes]]:
        asked.append("vectors")
        return []

    def pending(_store: IndexStore, _model: str) -> int:
        asked.append("pending")
        return 0

    monkeypatch.setattr(IndexStore, "vectors", vectors)
    monkeypatch.setattr(IndexStore, "pending", pending)
    return asked


def test_a_new_process_reads_the_saved_matrix_not_the_database(
    memory_dir: Path, make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _notes(memory_dir)
    first = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    first.sync()
    expected = _ranked(first, "redis expiry pipeline")
    first.close()
    asked = _no_join(monkeypatch)
    again = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    again.sync()
    assert _ranked(again, "redis expiry pipeline") == expected
    assert asked == []  # neither the join of every vector nor the pending count ran


def test_a_changed_chunk_makes_the_saved_matrix_stale(
    memory_dir: Path, make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    note = _notes(memory_dir)
    first = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    first.sync()
    first.search("redis")
    first.close()
    write(note, note.read_text() + "\nredis expiry moved to the worker queue")
    second = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    second.sync()
    expected = _ranked(second, "redis worker queue")
    assert any("queue" in r.snippet for r in second.search("redis worker queue").results)
    second.close()
    fresh = make_index(chunk_tokens=60, chunk_overlap_tokens=0)  # the file was saved anew
    asked = _no_join(monkeypatch)
    fresh.sync()
    assert _ranked(fresh, "redis worker queue") == expected and asked == []


def test_a_damaged_saved_matrix_is_ignored(memory_dir: Path, make_index: IndexFactory) -> None:
    _notes(memory_dir)
    first = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    first.sync()
    expected = _ranked(first, "stripe retries")
    saved = Path(f"{first.db_path}.vectors")
    first.close()
    data = saved.read_bytes()
    saved.write_bytes(data[: len(data) // 2])
    again = make_index(chunk_tokens=60, chunk_overlap_tokens=0)
    again.sync()
    assert _ranked(again, "stripe retries") == expected
    assert saved.read_bytes() == data  # rebuilt from the database and saved again


def test_an_incomplete_index_saves_no_matrix(memory_dir: Path, make_index: IndexFactory) -> None:
    _notes(memory_dir)
    blind = HashEmbedder(fail="error")
    index = make_index(blind, chunk_tokens=60, chunk_overlap_tokens=0)
    index.sync()
    index.search("helm")
    assert not Path(f"{index.db_path}.vectors").exists()


def test_the_model_checksum_is_computed_once_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    hashed: list[Path] = []
    real = embeddings.sha256_file

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(embeddings, "sha256_file", counting)
    embeddings._verify(model, digest, "the model")
    embeddings._verify(model, digest, "the model")
    assert hashed == [model]
    model.write_bytes(b"WEIGHTS")  # another file now: checked again, and refused
    os.utime(model, (time.time() + 5, time.time() + 5))
    with pytest.raises(EmbeddingUnavailable):
        embeddings._verify(model, digest, "the model")
    assert hashed == [model, model]


def test_the_search_index_does_not_load_the_injection_guard() -> None:
    program = "import sys, agentsh.memory.index\nprint('agentsh.memory.guard' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_git_commands_run_from_the_command_line_do_not_load_asyncio() -> None:
    program = "import sys, agentsh.gitutil\nprint('asyncio' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr
