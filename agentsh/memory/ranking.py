"""Ranking for the memory search: scores, fusion, decay, diversity and snippets (SPEC §5).

A candidate chunk gets a keyword score (BM25 from FTS5, shaped by how much of the query it
covers; a substring-only match always below every real match) and a vector score (cosine);
the two are fused with weights that lean on keywords for CJK queries when the embedding model
is English-only. Older files decay with a half-life (dated names by their date), curated files
never; MMR keeps near-duplicates from filling the top. The candidates come from
:class:`~agentsh.memory.index.MemoryIndex`; everything here is pure computation on them.
"""

from __future__ import annotations

import bisect
import math
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from agentsh.config import SearchSettings
from agentsh.memory.query import QueryPlan
from agentsh.memory.sources import CURATED_NAMES

SNIPPET_CHARS = 240
# LIKE-only rows (1-2 character CJK words the trigram index cannot see) score below the weakest
# real keyword match (SPEC §5 rule 3); when nothing matched through the index, at most this.
LIKE_ONLY_CEILING = 0.8


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    KEYWORD_ONLY = "keyword-only"


class MatchKind(StrEnum):
    KEYWORD = "keyword"  # matched through the trigram index
    SUBSTRING = "substring"  # only through the LIKE fallback for short words
    VECTOR = "vector"  # no keyword matched; found by meaning


@dataclass(frozen=True, slots=True)
class SearchResult:
    path: str  # display name: project-relative, or "user:..." / "workspace:..."
    abs_path: str
    start_line: int
    end_line: int
    score: float
    keyword_score: float
    vector_score: float | None  # None when this chunk was ranked without a vector
    snippet: str
    text: str
    match: MatchKind
    keyword_only: bool  # ranked by keywords alone (no model, or its vector is pending)

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    results: tuple[SearchResult, ...]
    mode: SearchMode
    note: str  # why keyword-only, or how many vectors are still being computed
    model_id: str
    vector_weight: float  # the weights actually used for this query (after rule 2)
    keyword_weight: float
    pending_vectors: int = 0

    @property
    def keyword_only(self) -> bool:
        return self.mode is SearchMode.KEYWORD_ONLY


@dataclass(slots=True)
class Candidate:
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    text: str
    rank: float | None = None  # FTS5 bm25 (negative, lower is better); None: no FTS hit
    vector: float | None = None  # cosine; None: no vector yet
    keyword: float = 0.0
    substring: bool = False
    score: float = 0.0
    decayed_keyword: float = 0.0
    coverage: float = 0.0  # share of the query's words the chunk holds
    tokens: frozenset[str] = field(default_factory=frozenset)


# -- the substring scan ----------------------------------------------------------------------


class Haystack:
    """Every chunk's text, lowercased, joined into one string: the LIKE of SPEC §5 rule 3.

    The trigram index cannot see words of one or two characters, and a LIKE over the table reads
    every page of it (some 60 ms for 10,000 chunks); ``str.find`` over one string in memory
    does the same substring scan in a few. It costs about the indexed text's size in memory,
    is built on the first short-word query, and is dropped whenever the chunks change.
    """

    MAX_HITS = 200_000  # a runaway one-character term stops counting here

    def __init__(self, rows: Iterable[tuple[int, str]]) -> None:
        parts: list[str] = []
        self.ids: list[int] = []
        self.starts: list[int] = []
        position = 0
        for chunk_id, text in rows:
            lowered = text.lower()
            self.ids.append(chunk_id)
            self.starts.append(position)
            parts.append(lowered)
            position += len(lowered) + 1
        self.text = "\x00".join(parts)

    def nominate(self, terms: Sequence[str], pool: int) -> list[int]:
        """The ``pool`` chunks with the most occurrences of the terms."""
        counts: Counter[int] = Counter()
        hits = 0
        for term in terms:
            needle = term.lower()
            at = self.text.find(needle)
            while at != -1 and hits < self.MAX_HITS:
                counts[self.ids[bisect.bisect_right(self.starts, at) - 1]] += 1
                hits += 1
                at = self.text.find(needle, at + len(needle))
        return [chunk_id for chunk_id, _n in counts.most_common(pool)]


# -- scoring ---------------------------------------------------------------------------------


def weights(
    plan: QueryPlan, settings: SearchSettings, *, multilingual: bool, vectors: bool = True
) -> tuple[float, float]:
    """(vector, keyword) weights for a query, normalised to sum to 1 (SPEC §5 rule 2): an
    English-only embedding model gets less weight the more of the query is CJK."""
    vector_w = max(0.0, settings.vector_weight) if vectors else 0.0
    keyword_w = max(0.0, settings.keyword_weight)
    if not multilingual:
        vector_w *= plan.non_cjk_letter_share
    total = vector_w + keyword_w
    if total <= 0:
        return 0.0, 1.0
    return vector_w / total, keyword_w / total


def score(plan: QueryPlan, candidates: list[Candidate], vector_w: float, keyword_w: float) -> None:
    """Give every candidate its keyword score and its fused score."""
    words = plan.words
    real: list[float] = []
    for c in candidates:
        lowered = unicodedata.normalize("NFKC", c.text).lower()
        coverage = sum(w.coverage(lowered) for w in words) / len(words) if words else 0.0
        c.coverage = coverage
        if c.rank is not None:
            bm25 = abs(c.rank) / (1.0 + abs(c.rank))
            c.keyword = keyword_score(bm25, coverage)
            real.append(c.keyword)
        elif coverage > 0:
            c.substring = True
            count = sum(lowered.count(w.stem) for w in words if w.stem)
            density = count / (count + 1.0)
            c.keyword = coverage * (0.8 + 0.2 * density)
    # Ranked below every real match, whatever it scored (SPEC §5 rule 3).
    ceiling = min(real) * 0.99 if real else LIKE_ONLY_CEILING
    for c in candidates:
        if c.substring:
            c.keyword = min(c.keyword * LIKE_ONLY_CEILING, ceiling)
        vector = max(0.0, c.vector) if c.vector is not None else 0.0
        c.score = fuse(vector, c.keyword, vector_w, keyword_w)
        c.decayed_keyword = c.keyword


def decay(candidates: list[Candidate], mtimes: Mapping[str, int], half_life_days: float) -> None:
    """Older files count less: halved every ``half_life_days`` (a date in the file's name is
    its age, else its mtime); MEMORY.md and USER.md never decay."""
    half_life = max(half_life_days, 1e-6)
    now = time.time()
    for c in candidates:
        name = Path(c.path).name
        if name in CURATED_NAMES:
            continue
        stamp = date_in_name(name)
        if stamp is None:
            mtime = mtimes.get(c.path)
            if mtime is None:
                continue
            stamp = mtime / 1e9
        age_days = max(0.0, (now - stamp) / 86400.0)
        factor = math.exp(-math.log(2) * age_days / half_life)
        c.score *= factor
        c.decayed_keyword = c.keyword * factor


def to_result(
    plan: QueryPlan, c: Candidate, hybrid: bool, display: Callable[[str], str]
) -> SearchResult:
    """What a search returns for a candidate (``display``: its path as results show it)."""
    if c.rank is not None:
        match = MatchKind.KEYWORD
    elif c.substring:
        match = MatchKind.SUBSTRING
    else:
        match = MatchKind.VECTOR
    return SearchResult(
        path=display(c.path),
        abs_path=c.path,
        start_line=c.start_line,
        end_line=c.end_line,
        score=round(c.score, 4),
        keyword_score=round(c.keyword, 4),
        vector_score=round(max(0.0, c.vector), 4) if c.vector is not None else None,
        snippet=make_snippet(c.text, plan),
        text=c.text,
        match=match,
        keyword_only=not hybrid or c.vector is None,
    )


def keyword_score(bm25: float, coverage: float) -> float:
    """SPEC §5's BM25 mapping |r| / (1 + |r|), tempered by how much of the query the chunk holds.

    ``coverage`` is the share of query words the chunk really contains (English words at a word
    start, CJK words whole or by n-grams). The trigram index matches substrings anywhere, so
    "miss" finds "permission": a chunk holding none of the query's words scores 0 however BM25
    ranked it, and a partial match is scaled down. FTS5's BM25 also gives a term found in more
    than half of the chunks an IDF of ~0, so in a small memory a chunk holding every query word
    could score 0: the floor of 0.6 x coverage keeps it in reach of the minimum score.
    """
    if coverage <= 0:
        return 0.0
    return max(bm25 * (0.6 + 0.4 * coverage), 0.6 * coverage)


def fuse(vector: float, keyword: float, vector_w: float, keyword_w: float) -> float:
    return vector_w * vector + keyword_w * keyword


_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def date_in_name(name: str) -> float | None:
    """A YYYY-MM-DD date in a file name, as a UTC timestamp."""
    match = _DATE_IN_NAME.search(name)
    if match is None:
        return None
    import calendar

    try:
        year, month, day = (int(g) for g in match.groups())
        return float(calendar.timegm((year, month, day, 0, 0, 0)))
    except (ValueError, OverflowError):
        return None


_WORD = re.compile(r"\w+")


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFC", text).lower()))


def mmr(candidates: list[Candidate], lam: float, k: int) -> list[Candidate]:
    """Maximal marginal relevance: relevance against the Jaccard overlap with the picks."""
    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    span = high - low
    for c in candidates:
        c.tokens = word_set(c.text)
    relevance = {id(c): (c.score - low) / span if span > 0 else 1.0 for c in candidates}
    picked: list[Candidate] = []
    rest = list(candidates)
    while rest and len(picked) < k:
        best = max(
            rest,
            key=lambda c: (
                lam * relevance[id(c)]
                - (1 - lam) * max((jaccard(c.tokens, p.tokens) for p in picked), default=0.0),
                c.score,
            ),
        )
        picked.append(best)
        rest.remove(best)
    return picked + rest


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def make_snippet(text: str, plan: QueryPlan, limit: int = SNIPPET_CHARS) -> str:
    """The lines around the first keyword hit (or the chunk's start), at most ``limit`` chars.

    A typed doc's front matter (``type:``, ``title:``) is metadata the result line already
    names, so the snippet comes from the body when there is one.
    """
    lines = _without_front_matter(text.splitlines() or [text])
    needles = [w.stem for w in plan.words if w.stem] + [g for w in plan.words for g in w.trigrams]
    hit = 0
    for i, line in enumerate(lines):
        lowered = line.lower()
        if any(n in lowered for n in needles):
            hit = i
            break
    else:
        while hit < len(lines) - 1 and not lines[hit].strip():
            hit += 1
    start = max(0, hit - 1) if hit > 0 and len(lines[hit]) < limit // 2 else hit
    snippet = " ".join(s.strip() for s in lines[start : start + 4] if s.strip())
    if len(snippet) > limit:
        snippet = snippet[: limit - 1].rstrip() + "…"
    return snippet


def _without_front_matter(lines: list[str]) -> list[str]:
    """``lines`` after a leading ``---`` ... ``---`` block, unless nothing follows it."""
    if not lines or lines[0].strip() != "---":
        return lines
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            body = lines[end + 1 :]
            return body if any(line.strip() for line in body) else lines
    return lines
