"""Retrieval quality of memory search on the bilingual test set, keyword-only and hybrid.

Runs the set of tests/data/retrieval (70 notes in English, Korean, Japanese and Chinese; 63
answerable queries, 1- and 2-character Korean ones included, and 9 that nothing answers)
through the real index: once with keywords only, once with the local MiniLM model. Prints
recall@5, MRR and abstentions for both, and the hybrid recall@5 last.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsh.config import SearchSettings
from agentsh.memory.embeddings import LocalMiniLM, NoEmbedder
from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.retrieval import evaluate, install_corpus


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-quality-"))
    user = UserPaths(home / "config", home / "data", home / "cache")
    project = ProjectPaths(home / "project")
    placed = install_corpus(user, project)
    results = {}
    for name, embedder in (("keyword", NoEmbedder()), ("hybrid", LocalMiniLM())):
        with MemoryIndex.open(user, project, SearchSettings(), embedder=embedder) as index:
            started = time.perf_counter()
            index.sync()
            index.wait_for_vectors()
            built = time.perf_counter() - started
            metrics = evaluate(index, placed)
        results[name] = metrics
        print(f"{name}: {metrics.summary()} (indexed in {built:.1f} s)")
    print(f"search_keyword_recall_at_5: {results['keyword'].recall_at_5:.3f}")
    print(f"search_keyword_mrr: {results['keyword'].mrr:.3f}")
    print(f"search_hybrid_mrr: {results['hybrid'].mrr:.3f}")
    print(f"search_hybrid_recall_at_5: {results['hybrid'].recall_at_5:.3f}")


if __name__ == "__main__":
    main()
