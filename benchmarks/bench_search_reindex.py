"""Reindexing one changed 50 KB memory file in a 10,000-chunk index (goal under 200 ms).

Builds the same synthetic memory as bench_search.py (random vectors, so building is quick),
adds a 50 KB note, then 20 times changes one line of it and times ``MemoryIndex.sync()``: the
stat walk over every source file, hashing, chunking, deleting the old chunks from the table and
the trigram index, and inserting the new ones, in one transaction. Embeddings are excluded: new
chunks are embedded afterwards on the background thread. Prints the median of ``index_file``
(what compaction calls after writing a summary) first and the median of ``sync`` last.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_search import KOREAN, TECH, RandomEmbedder, _paths, make_corpus

from agentsh.config import SearchSettings
from agentsh.memory.index import MemoryIndex

ROUNDS = 20


def _note(rng: random.Random, size: int) -> list[str]:
    lines = ["# Release checklist", ""]
    while sum(len(line) + 1 for line in lines) < size:
        words = [rng.choice(TECH) for _ in range(8)] + [rng.choice(KOREAN)]
        lines.append("- " + " ".join(words) + ".")
    return lines


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-reindex-"))
    user, project = _paths(home)
    make_corpus(project.memory_dir, files=230, lines_per_file=850)
    rng = random.Random(5)
    lines = _note(rng, 50 * 1024)
    note = project.memory_dir / "docs" / "release-checklist.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("\n".join(lines), encoding="utf-8")
    settings = SearchSettings()
    with MemoryIndex.open(user, project, settings, embedder=RandomEmbedder()) as index:
        index.sync()
        index.wait_for_vectors()
        status = index.status()
        size = note.stat().st_size
        print(f"index: {status.chunks} chunks in {status.files} files; note {size / 1024:.0f} KB")
        by_file: list[float] = []
        by_sync: list[float] = []
        for round_ in range(ROUNDS):
            for timings, call in ((by_file, lambda: index.index_file(note)), (by_sync, index.sync)):
                where = rng.randrange(2, len(lines))
                lines[where] = f"- changed in round {round_}: {rng.choice(TECH)} {time.time()}"
                note.write_text("\n".join(lines), encoding="utf-8")
                started = time.perf_counter()
                call()
                timings.append((time.perf_counter() - started) * 1000)
                index.wait_for_vectors()
    print(f"search_reindex_50kb_index_file: {statistics.median(by_file):.1f} ms")
    print(f"search_reindex_50kb: {statistics.median(by_sync):.1f} ms")


if __name__ == "__main__":
    main()
