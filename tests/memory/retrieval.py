"""The retrieval test set (tests/data/retrieval) and its metrics: recall@5 and MRR.

Documents are laid out the way a real memory is: the user profile becomes USER.md in the user's
memory folder, the session summary a compaction summary in the workspace of one of this
project's sessions, and everything else markdown files under the project's .agentsh/memory/.
Shared by the tests and by benchmarks/bench_search_quality.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths

DATA = Path(__file__).resolve().parent.parent / "data" / "retrieval"
SESSION_ID = "0a1b2c3d-0000-4000-8000-000000000001"


@dataclass(frozen=True, slots=True)
class Query:
    lang: str
    query: str
    relevant: frozenset[str]


@dataclass(slots=True)
class Metrics:
    queries: int = 0
    hits: int = 0
    reciprocal: float = 0.0
    by_lang: dict[str, list[float]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    negatives: int = 0  # queries nothing in the corpus answers
    abstained: int = 0  # ... that got no result at all
    false_results: list[str] = field(default_factory=list)

    @property
    def abstention(self) -> float:
        return self.abstained / self.negatives if self.negatives else 1.0

    @property
    def recall_at_5(self) -> float:
        return self.hits / self.queries if self.queries else 0.0

    @property
    def mrr(self) -> float:
        return self.reciprocal / self.queries if self.queries else 0.0

    def lang_recall(self, lang: str) -> float:
        rows = self.by_lang.get(lang, [])
        return sum(1 for r in rows if r > 0) / len(rows) if rows else 0.0

    def summary(self) -> str:
        langs = " ".join(f"{lang}={self.lang_recall(lang):.2f}" for lang in sorted(self.by_lang))
        return (
            f"recall@5={self.recall_at_5:.3f} mrr={self.mrr:.3f} ({langs}) "
            f"abstention={self.abstained}/{self.negatives}"
        )


def load_queries() -> list[Query]:
    raw = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))
    return [Query(q["lang"], q["query"], frozenset(q["relevant"])) for q in raw]


def doc_ids() -> list[str]:
    return sorted(p.stem for p in (DATA / "docs").glob("*.md"))


def install_corpus(user: UserPaths, project: ProjectPaths) -> dict[str, str]:
    """Write the documents where agentsh looks for memory; returns absolute path -> doc id."""
    placed: dict[str, str] = {}
    memory = project.memory_dir
    (memory / "docs").mkdir(parents=True, exist_ok=True)
    user.user_memory_dir.mkdir(parents=True, exist_ok=True)
    sessions = user.project_sessions_dir(project.root)
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / f"20250101T000000Z_{SESSION_ID}.jsonl").write_text("{}\n", encoding="utf-8")
    workspace = user.session_workspace(SESSION_ID)
    workspace.mkdir(parents=True, exist_ok=True)
    for source in sorted((DATA / "docs").glob("*.md")):
        doc = source.stem
        if doc == "en-user-profile":
            target = user.user_memory_file
        elif doc == "en-session-001-summary":
            target = workspace / "001-summary.md"
        elif source.read_text(encoding="utf-8").startswith("---"):
            target = memory / "docs" / source.name
        else:
            target = memory / source.name
        target.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        placed[str(target.resolve())] = doc
    return placed


def evaluate(index: MemoryIndex, placed: dict[str, str], k: int = 5) -> Metrics:
    metrics = Metrics()
    for q in load_queries():
        response = index.search(q.query, max_results=k)
        if not q.relevant:
            metrics.negatives += 1
            if response.results:
                got = [placed.get(r.abs_path, r.path) for r in response.results]
                metrics.false_results.append(f"[{q.lang}] {q.query!r} -> {got}")
            else:
                metrics.abstained += 1
            continue
        rank = 0
        for position, result in enumerate(response.results, start=1):
            if placed.get(result.abs_path) in q.relevant:
                rank = position
                break
        metrics.queries += 1
        value = 1.0 / rank if rank else 0.0
        metrics.hits += 1 if rank else 0
        metrics.reciprocal += value
        metrics.by_lang.setdefault(q.lang, []).append(value)
        if not rank:
            got = [placed.get(r.abs_path, r.path) for r in response.results]
            metrics.misses.append(f"[{q.lang}] {q.query!r} -> {got}")
    return metrics
