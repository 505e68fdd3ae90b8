"""Retrieval quality on the bilingual test set (tests/data/retrieval), kept as floors.

The set: 70 developer notes (English, Korean, Japanese, Chinese: build steps, decisions, bugs,
incidents, people's preferences) laid out as a real memory (project memory folder, USER.md, a
compaction summary), 63 questions with the notes that answer them (1- and 2-character Korean
queries included) and 9 questions nothing answers. Measured when the floors were set:

    keyword-only        recall@5 0.889  MRR 0.844  (abstained on 8 of 9 unanswerable)
    hybrid, MiniLM int8 recall@5 0.968  MRR 0.915  (abstained on 8 of 9 unanswerable)

The floors sit a little below, so a regression fails and float noise does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.memory.embeddings import LocalMiniLM, NoEmbedder
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import IndexFactory
from tests.memory.retrieval import Metrics, doc_ids, evaluate, install_corpus, load_queries

KEYWORD_RECALL_FLOOR = 0.87
KEYWORD_MRR_FLOOR = 0.82
HYBRID_RECALL_FLOOR = 0.95
HYBRID_MRR_FLOOR = 0.89
ABSTENTION_FLOOR = 8 / 9


def test_the_set_is_big_enough_and_covers_short_korean_queries() -> None:
    queries = load_queries()
    answered = [q for q in queries if q.relevant]
    assert len(doc_ids()) >= 60 and len(answered) >= 40
    korean = [q.query for q in answered if q.lang == "ko"]
    assert any(len(q) == 1 for q in korean) and any(len(q) == 2 for q in korean)
    assert {q.lang for q in answered} == {"en", "ko", "ja", "zh"}
    known = set(doc_ids())
    assert all(q.relevant <= known for q in queries)


def _run(
    make_index: IndexFactory, paths: tuple[UserPaths, ProjectPaths], embedder: object
) -> Metrics:
    placed = install_corpus(*paths)
    index = make_index(embedder)
    report = index.sync()
    assert len(report.indexed) == len(doc_ids())
    metrics = evaluate(index, placed)
    print(f"\n{type(embedder).__name__}: {metrics.summary()}")
    for line in metrics.misses + metrics.false_results:
        print("  ", line)
    return metrics


def test_keyword_only_retrieval_stays_above_its_floor(
    make_index: IndexFactory, paths: tuple[UserPaths, ProjectPaths]
) -> None:
    metrics = _run(make_index, paths, NoEmbedder())
    assert metrics.recall_at_5 >= KEYWORD_RECALL_FLOOR
    assert metrics.mrr >= KEYWORD_MRR_FLOOR
    assert metrics.lang_recall("ko") == 1.0  # 1- and 2-character queries included
    assert metrics.abstention >= ABSTENTION_FLOOR


@pytest.mark.slow
@pytest.mark.timeout(300)  # the model embeds the set twice over: 100-144 s at load 10-17
def test_hybrid_retrieval_with_the_local_model_beats_keywords_and_its_floor(
    make_index: IndexFactory, paths: tuple[UserPaths, ProjectPaths], tmp_path: Path
) -> None:
    hybrid = _run(make_index, paths, LocalMiniLM())
    assert hybrid.recall_at_5 >= HYBRID_RECALL_FLOOR
    assert hybrid.mrr >= HYBRID_MRR_FLOOR
    assert hybrid.lang_recall("ko") == 1.0
    assert hybrid.abstention >= ABSTENTION_FLOOR
    # The same corpus, keywords only: the model must add something.
    keyword = evaluate(make_index(NoEmbedder()), install_corpus(*paths))
    assert hybrid.recall_at_5 > keyword.recall_at_5
    assert hybrid.mrr > keyword.mrr
