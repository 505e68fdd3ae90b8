"""``agentsh memory search`` remembers its query vectors on disk (issue 16): a query asked
again costs no model load in a new process, and finds what it found the first time."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentsh.cli import main
from agentsh.memory import query_vectors
from agentsh.memory.embeddings import LocalMiniLM
from agentsh.memory.query_vectors import FILE_NAME, RememberingEmbedder, remembering
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import HashEmbedder, write


def _cache(tmp_path: Path) -> tuple[HashEmbedder, RememberingEmbedder]:
    inner = HashEmbedder()  # counts its calls, lists what it embedded
    return inner, RememberingEmbedder(inner, tmp_path / "cache" / FILE_NAME)


def test_a_query_is_embedded_once_and_recalled_bit_for_bit(tmp_path: Path) -> None:
    inner, cached = _cache(tmp_path)
    first = cached.embed(["redis cache expiry"])
    cached.close()
    inner2, again = _cache(tmp_path)  # another process
    second = again.embed(["redis cache expiry"])
    assert inner.embedded == ["redis cache expiry"] and inner2.calls == 0
    assert second.dtype == np.float32 and np.array_equal(first, second)
    again.embed(["helm deploys"])  # another query is embedded
    assert inner2.embedded == ["helm deploys"]


def test_batches_go_to_the_model_and_are_not_kept(tmp_path: Path) -> None:
    inner, cached = _cache(tmp_path)
    cached.embed(["chunk one", "chunk two"])
    cached.embed(["chunk one", "chunk two"])
    assert inner.calls == 2


def test_the_file_is_the_users_alone_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_vectors, "MAX_QUERIES", 3)
    _inner, cached = _cache(tmp_path)
    for i in range(5):
        cached.embed([f"query {i}"])
    cached.close()
    path = tmp_path / "cache" / FILE_NAME
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)
    _inner, again = _cache(tmp_path)
    again.embed(["query 4"])
    assert path.stat().st_mode & 0o777 == 0o600
    rows = sqlite3.connect(path).execute("SELECT query FROM queries ORDER BY query").fetchall()
    assert rows == [("query 2",), ("query 3",), ("query 4",)]


def test_a_damaged_or_linked_file_is_a_miss_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "cache" / FILE_NAME
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database at all" * 100)
    inner, cached = _cache(tmp_path)
    assert cached.embed(["q"]).shape == (1, 64) and cached.embed(["q"]).shape == (1, 64)
    assert inner.calls == 2
    path.unlink()
    elsewhere = tmp_path / "elsewhere.sqlite"
    path.symlink_to(elsewhere)
    inner, cached = _cache(tmp_path)
    cached.embed(["q"])
    assert not elsewhere.exists()  # never created through the link


def test_only_the_local_models_vectors_are_kept(tmp_path: Path) -> None:
    other = HashEmbedder()
    assert remembering(other, tmp_path) is other  # a provider's model may change behind its name
    assert isinstance(remembering(LocalMiniLM(), tmp_path), RememberingEmbedder)


@pytest.mark.slow
def test_memory_search_asked_again_loads_no_model(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = ProjectPaths(project).memory_dir
    write(memory / "MEMORY.md", "# Memory\nThe API runs on port 8000.\nRedis is on 6379.")
    write(memory / "deploy.md", "Deploys: helm upgrade, canary 10 % for 30 minutes.")
    query = ["memory", "search", "which port does the API listen on", "--json"]
    assert main(query) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["mode"] == "hybrid" and first["results"][0]["vector_score"] > 0.3
    assert (UserPaths.from_env().cache_dir / FILE_NAME).exists()
    loads: list[bool] = []
    real = LocalMiniLM.load

    def counting(self: LocalMiniLM, *, quick: bool = False) -> None:
        loads.append(quick)
        real(self, quick=quick)

    monkeypatch.setattr(LocalMiniLM, "load", counting)
    assert main(query) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert loads == []
    # and as a process: neither onnxruntime nor tokenizers (nor litellm, Textual) is imported
    program = (
        "import sys\nfrom agentsh.cli import main\n"
        f"code = main({query!r})\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'litellm', 'textual')"
        " if m in sys.modules]\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr
    assert json.loads(done.stdout) == first
