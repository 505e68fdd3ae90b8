"""A full index of 10 MB of markdown: the keyword part, and embedding throughput apart.

The keyword part (walk, hash, chunk, SQLite rows and the FTS5 trigram index, one transaction per
file) is timed over 10 MB of synthetic notes with embeddings switched off. Embedding is measured
separately on 128 of those chunks with the local MiniLM model (what the background thread does
after a sync), and the time to embed all of them is extrapolated. Prints the keyword time last.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_search import _paths, make_corpus

from agentsh.config import SearchSettings
from agentsh.memory.embeddings import LocalMiniLM, NoEmbedder
from agentsh.memory.index import MemoryIndex

SAMPLE = 128


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-index-"))
    user, project = _paths(home)
    size = make_corpus(project.memory_dir, files=182, lines_per_file=850)
    index = MemoryIndex.open(user, project, SearchSettings(embedding="none"), embedder=NoEmbedder())
    started = time.perf_counter()
    report = index.sync()
    keyword_s = time.perf_counter() - started
    chunks = index.status().chunks
    index.close()
    db_mb = index.db_path.stat().st_size / 1e6
    print(
        f"corpus: {size / 1e6:.1f} MB in {len(report.indexed)} files -> {chunks} chunks, "
        f"database {db_mb:.0f} MB"
    )
    print(f"search_index_keyword_throughput: {size / 1e6 / keyword_s:.2f} MB/s")

    with sqlite3.connect(index.db_path) as conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM chunks LIMIT ?", (SAMPLE,))]
    model = LocalMiniLM()
    model.load()
    model.embed(texts[:4])  # warm up
    started = time.perf_counter()
    model.embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    print(f"search_embedding_throughput: {rate:.1f} chunks/s")
    print(f"search_full_index_10mb_embeddings: {chunks / rate / 60:.1f} min")
    print(f"search_full_index_10mb_keyword: {keyword_s:.1f} s")


if __name__ == "__main__":
    main()
