"""Memory search latency over 10,000 chunks (SPEC §5; goal p50 under 20 ms).

Builds a synthetic memory of about 16 MB of developer notes (English and Korean words, 200
files) that chunks into 10,000+ chunks, gives every chunk a random 384-dimension vector stored
under the local model's id (embedding 10,000 chunks for real would take many minutes and does
not change search cost), then reopens the index with the real MiniLM model, so each measured
search includes embedding its (never repeated) query, the FTS5 query, the LIKE scan for short
Korean words, the cosine over the in-memory matrix, scoring and snippets. Prints p50 and p95 of
200 queries, the ranking-only cost (query vectors precomputed) before that, and p50 last.

Other benchmarks import :func:`make_corpus` from here.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentsh.config import SearchSettings
from agentsh.memory.embeddings import LOCAL_MODEL_ID, LocalMiniLM, normalize_rows
from agentsh.memory.index import MemoryIndex
from agentsh.paths import ProjectPaths, UserPaths

TECH = [
    *[
        "deploy",
        "helm",
        "redis",
        "celery",
        "postgres",
        "alembic",
        "migration",
        "index",
        "query",
        "cache",
        "token",
        "expiry",
    ],
    *[
        "webhook",
        "stripe",
        "invoice",
        "payment",
        "retry",
        "backoff",
        "docker",
        "image",
        "build",
        "pipeline",
        "ruff",
        "mypy",
    ],
    *[
        "pytest",
        "fixture",
        "grafana",
        "alert",
        "sentry",
        "trace",
        "logging",
        "worker",
        "queue",
        "timeout",
        "rollback",
    ],
    *[
        "canary",
        "release",
        "schema",
        "tenant",
        "permission",
        "role",
        "session",
        "cookie",
        "oauth",
        "callback",
    ],
    *["bundle", "vite", "tailwind", "storybook"],
]
KOREAN = [
    *[
        "배포",
        "빌드",
        "캐시",
        "권한",
        "토큰",
        "만료",
        "로그",
        "보존",
        "작업",
        "큐",
        "장애",
        "원인",
        "조치",
        "설정",
        "테스트",
        "데이터",
    ],
    *[
        "인덱스",
        "쿼리",
        "성능",
        "마이그레이션",
        "롤백",
        "알림",
        "당번",
        "결제",
        "웹훅",
        "재시도",
        "환경",
        "변수",
        "비밀",
        "리뷰",
    ],
]


class RandomEmbedder:
    """Random unit vectors filed under the local model's id: fills the index in seconds."""

    model_id = LOCAL_MODEL_ID
    dims = 384
    multilingual = False
    enabled = True

    def __init__(self, seed: int = 7) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> Any:
        vectors = self._rng.standard_normal((len(texts), self.dims)).astype("float32")
        return normalize_rows(vectors)


def _pseudo_words(rng: random.Random, n: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """20,000 words with Zipf frequencies, as in real text; the tech and Korean words (the ones
    queries use) sit at ranks 50-3,000, so each appears in a few percent of the chunks."""
    words = _pseudo_words(rng, 20_000)
    for word in TECH + KOREAN:
        words.insert(rng.randint(50, 3_000), word)
    weights = [1.0 / (rank + 1) ** 1.07 for rank in range(len(words))]
    return words, weights


def make_corpus(folder: Path, *, files: int, lines_per_file: int, seed: int = 1) -> int:
    """Markdown notes with a Zipf word mix; returns the bytes written."""
    rng = random.Random(seed)
    words, weights = _vocabulary(rng)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for f in range(files):
        lines = [f"# Note {f}: {rng.choice(TECH)} {rng.choice(TECH)}", ""]
        for i in range(lines_per_file - 2):
            line = rng.choices(words, weights, k=rng.randint(7, 12))
            lines.append(("- " if i % 3 == 0 else "") + " ".join(line) + ".")
        text = "\n".join(lines) + "\n"
        (folder / f"note-{f:04d}.md").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def _paths(home: Path) -> tuple[UserPaths, ProjectPaths]:
    user = UserPaths(home / "config", home / "data", home / "cache")
    return user, ProjectPaths(home / "project")


def _queries(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    for i in range(n):
        match i % 4:
            case 0:
                out.append(f"how do we {rng.choice(TECH)} the {rng.choice(TECH)} {i}")
            case 1:
                out.append(f"{rng.choice(TECH)} {rng.choice(TECH)}")
            case 2:
                out.append(f"{rng.choice(KOREAN)} {rng.choice(KOREAN)}")
            case _:
                out.append(rng.choice(KOREAN)[:1] if i % 8 == 3 else rng.choice(KOREAN))
    return out


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="agentsh-bench-search-"))
    user, project = _paths(home)
    size = make_corpus(project.memory_dir, files=230, lines_per_file=850)
    settings = SearchSettings()
    started = time.perf_counter()
    with MemoryIndex.open(
        user, project, settings, embedder=RandomEmbedder(), background=False
    ) as index:
        index.sync()
        chunks = index.status().chunks
    built = time.perf_counter() - started
    print(f"corpus: {size / 1e6:.1f} MB, {chunks} chunks, built in {built:.1f} s")

    model = LocalMiniLM()
    model.load()
    index = MemoryIndex.open(user, project, settings, embedder=model)
    index.sync()
    rng = random.Random(3)
    index.search("warm up the matrix")  # loads the vectors into memory once
    queries = _queries(rng, 200)

    # Ranking alone: query vectors computed beforehand (the cache then serves them).
    for q in queries:
        index._query_vector(q)
    ranking: list[float] = []
    for q in queries:
        t = time.perf_counter()
        index.search(q)
        ranking.append((time.perf_counter() - t) * 1000)
    index._query_cache.clear()

    timings: list[float] = []
    for q in _queries(random.Random(4), 200):
        t = time.perf_counter()
        index.search(q)
        timings.append((time.perf_counter() - t) * 1000)
    index.close()
    print(f"search_ranking_only_p50: {statistics.median(ranking):.2f} ms")
    print(f"search_latency_p95: {_percentile(timings, 95):.2f} ms")
    print(f"search_latency_p50: {statistics.median(timings):.2f} ms")


if __name__ == "__main__":
    main()
