"""Typed memory docs: ``.agentsh/memory/docs/*.md``, keyword + type retrieval, prior knowledge.

A doc is a Markdown file with a small front matter (``type``, ``title``, ``created``). The type
says how much a doc is worth when it matches (SPEC §5): spec 0.5, skill 0.45, lesson 0.4, plan
0.3, issue 0.2, summary 0.1, note 0.05. At a session's first step the five best docs for the
user's first message go into the system prompt as a "Prior knowledge" block.

Scoring, exactly as specified: for each query keyword, 2 points if it is in the title, else 1
if it is in the body; the sum divided by 2 x the number of keywords; plus the type weight. A doc
no keyword hits scores 0 whatever its type. Keywords are the query's lowercased words minus a
small stop-word list. Latin words match at the start of a word ("test" finds "tests", never
"latest"), after a plural or verb ending is cut ("namespaces" finds "namespace"). CJK has no
spaces, so a CJK run is matched as a substring: Hangul runs lose a trailing particle ("설정을"
looks for "설정"), kana and Han runs are split apart (Japanese particles sit between them), and
Han runs longer than two characters become overlapping pairs, the usual unit of Chinese and
Japanese words.

Loading never fails on a bad file: a missing or broken front matter is reported and the doc is
treated as a ``note`` titled after its file name. Recalled docs are scanned by the injection
guard; an offending doc is left out of the prompt and reported.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.fsutil import LinkRefused, atomic_write, read_beneath, resolve_beneath
from agentsh.memory.guard import DEFAULT_MAX_SCAN_BYTES, Scope, Threat, fence_recalled, first_threat


class DocType(StrEnum):
    SPEC = "spec"
    SKILL = "skill"
    LESSON = "lesson"
    PLAN = "plan"
    ISSUE = "issue"
    SUMMARY = "summary"
    NOTE = "note"

    @property
    def weight(self) -> float:
        return TYPE_WEIGHTS[self]


TYPE_WEIGHTS: dict[DocType, float] = {
    DocType.SPEC: 0.5,
    DocType.SKILL: 0.45,
    DocType.LESSON: 0.4,
    DocType.PLAN: 0.3,
    DocType.ISSUE: 0.2,
    DocType.SUMMARY: 0.1,
    DocType.NOTE: 0.05,
}


class DocError(AgentshError):
    """A doc that cannot be written; the message says why."""


class DocBlockedError(DocError):
    """The injection guard flagged the doc's title or text."""

    def __init__(self, threat: Threat) -> None:
        self.threat = threat
        super().__init__(
            f"blocked by the memory guard: the text matches '{threat.name}' "
            f"({threat.description}): “{threat.excerpt}”"
        )


@dataclass(frozen=True, slots=True)
class MemoryDoc:
    path: Path
    type: DocType
    title: str
    created: str  # ISO date as written in the front matter; "" when missing or unreadable
    body: str


@dataclass(frozen=True, slots=True)
class PriorKnowledge:
    """The rendered block, the docs in it, and the docs the guard kept out."""

    text: str
    docs: tuple[tuple[MemoryDoc, float], ...]
    blocked: tuple[tuple[MemoryDoc, Threat], ...]

    @property
    def notices(self) -> list[str]:
        return [
            f"memory doc {doc.path.name} was left out of the prompt: it matches "
            f"'{threat.name}' ({threat.description}); review the file"
            for doc, threat in self.blocked
        ]


# -- loading ---------------------------------------------------------------------------------


# A memory doc is a note; a bigger file (a repository's 600 MB one) is skipped, never read whole.
MAX_DOC_BYTES = 8 * 1024 * 1024
# Problems named one by one; more are counted in one line (a repository's folder of thousands
# of bare notes flooded stderr and the chat, burying the lines that matter).
MAX_DOC_PROBLEMS = 20


def _read_capped(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(limit)


def load_docs(folder: Path, root: Path | None = None) -> tuple[list[MemoryDoc], list[str]]:
    """Every ``*.md`` in ``folder`` (sorted by name) and the problems found on the way.

    With ``root`` (the project's docs), nothing is read through a link out of ``root``: a
    linked-out folder or doc is skipped and named in the problems."""
    docs: list[MemoryDoc] = []
    problems: list[str] = []
    if root is not None and os.path.lexists(folder):
        try:
            folder = resolve_beneath(root, folder)
        except LinkRefused as exc:
            return [], [f"{folder}: memory docs not loaded: the folder {exc.reason}"]
    try:
        paths = sorted(path for path in folder.glob("*.md") if path.is_file())
    except OSError as exc:
        return [], [f"{folder}: memory docs could not be listed ({exc.strerror or exc})"]
    for path in paths:
        try:
            raw = (
                read_beneath(root, path, max_bytes=MAX_DOC_BYTES + 1)
                if root is not None
                else _read_capped(path, MAX_DOC_BYTES + 1)
            )
            if raw is None:
                continue
            if len(raw) > MAX_DOC_BYTES:
                problems.append(f"{path.name}: larger than {MAX_DOC_BYTES >> 20} MiB; skipped")
                continue
        except LinkRefused as exc:
            problems.append(f"{path.name}: not loaded: it {exc.reason}; skipped")
            continue
        except OSError as exc:
            problems.append(f"{path.name}: could not be read ({exc.strerror or exc}); skipped")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", errors="replace")
            problems.append(
                f"{path.name}: not valid UTF-8 (byte {exc.start:,}); read with replacements"
            )
        doc, found = parse_doc(path, text)
        docs.append(doc)
        problems.extend(found)
    if len(problems) > MAX_DOC_PROBLEMS:  # a folder of 3,000 bare notes: 3,000 lines
        more = len(problems) - MAX_DOC_PROBLEMS
        problems = [*problems[:MAX_DOC_PROBLEMS], f"... and {more:,} more problems in {folder}"]
    return docs, problems


def parse_doc(path: Path, text: str) -> tuple[MemoryDoc, list[str]]:
    """A doc from its file's text, and what was wrong with its front matter (if anything)."""
    fallback_title = title_from_file_name(path)
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return (
            MemoryDoc(path, DocType.NOTE, fallback_title, "", text.strip()),
            [
                f"{path.name}: no front matter (a --- block with type, title, created); "
                "treated as a note"
            ],
        )
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if closing is None:
        return (
            MemoryDoc(path, DocType.NOTE, fallback_title, "", "\n".join(lines[1:]).strip()),
            [f"{path.name}: the front matter is not closed by a --- line; treated as a note"],
        )
    body = "\n".join(lines[closing + 1 :]).strip()
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:closing], start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition(":")
        if not sep or not key.strip():
            return (
                MemoryDoc(path, DocType.NOTE, fallback_title, "", body),
                [
                    f"{path.name}: line {number} of the front matter is not `key: value`; "
                    "treated as a note"
                ],
            )
        fields[key.strip().lower()] = _unquote(value.strip())
    problems: list[str] = []
    raw_type = fields.get("type", "").lower()
    try:
        doc_type = DocType(raw_type)
    except ValueError:
        allowed = ", ".join(t.value for t in DocType)
        what = f"unknown type '{raw_type}'" if raw_type else "no type"
        problems.append(f"{path.name}: {what} (allowed: {allowed}); treated as a note")
        doc_type = DocType.NOTE
    title = " ".join(fields.get("title", "").split())
    if not title:
        problems.append(f"{path.name}: no title; using the file name")
        title = fallback_title
    created = fields.get("created", "")
    if created and not _is_iso_date(created):
        problems.append(f"{path.name}: created '{created}' is not a date (YYYY-MM-DD); ignored")
        created = ""
    return MemoryDoc(path, doc_type, title, created, body), problems


def title_from_file_name(path: Path) -> str:
    stem = re.sub(r"^\d{4}-\d{2}-\d{2}[-_ ]*", "", path.stem)
    return " ".join(re.split(r"[-_\s]+", stem)).strip() or path.stem


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            loaded = json.loads(value)
        except json.JSONDecodeError:
            return value[1:-1]
        return loaded if isinstance(loaded, str) else value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def _is_iso_date(value: str) -> bool:
    try:
        date.fromisoformat(value[:10])
    except ValueError:
        return False
    return True


# -- keywords and scoring --------------------------------------------------------------------

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with about from into onto over
    under up down out off is are was were be been being am it its this that these those i me
    my we our us you your he she him her they them their what which who whom whose how why
    when where do does did doing done can could should would will shall may might must not
    no so as than too very just please there here some any all have has had having let lets
    get got also only each more most other such own same both few again via per vs etc""".split()  # noqa: SIM905
)

_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_HIRAGANA = "\u3040-\u309f"
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(
    f"(?P<hangul>[{_HANGUL}]+)|(?P<hiragana>[{_HIRAGANA}]+)"
    f"|(?P<katakana>[{_KATAKANA}]+)|(?P<han>[{_HAN}]+)"
)
_LATIN_WORD = re.compile(r"[^\W_](?:[\w-]*[^\W_])?")
# Particles that attach to a Korean word: "설정을" is about "설정".
_HANGUL_PARTICLES = (
    "에서", "으로", "에게", "까지", "부터", "처럼", "보다", "하고",
    "은", "는", "이", "가", "을", "를", "에", "의", "도", "로", "와", "과", "만",
)  # fmt: skip


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def keywords(query: str) -> list[str]:
    """The query's keywords, in order, without duplicates (see the module doc)."""
    folded = _fold(query)
    found: list[str] = []
    for match in _CJK_RUN.finditer(folded):
        run = match.group()
        if match.lastgroup == "hangul":
            for particle in _HANGUL_PARTICLES:
                if run.endswith(particle) and len(run) - len(particle) >= 2:
                    run = run[: -len(particle)]
                    break
            if len(run) >= 2:
                found.append(run)
        elif match.lastgroup == "hiragana":
            if len(run) >= 3:  # shorter runs are particles and verb endings
                found.append(run)
        elif match.lastgroup == "katakana":
            if len(run) >= 2:
                found.append(run)
        elif len(run) <= 2:
            if len(run) == 2:
                found.append(run)
        else:
            found.extend(run[i : i + 2] for i in range(len(run) - 1))
    latin = _CJK_RUN.sub(" ", folded)
    for word in _LATIN_WORD.findall(latin):
        if len(word) >= 2 and word not in STOPWORDS:
            found.append(word)
    return list(dict.fromkeys(found))


def _is_cjk(keyword: str) -> bool:
    return _CJK_RUN.fullmatch(keyword) is not None


# Inflections cut from a Latin keyword before it is matched at word starts, so "namespaces"
# finds "namespace" and "deploying" finds "deploy" (the match is a prefix, so "deploy" still
# finds "deployment"). A stem keeps at least four letters: "uses" never becomes "us".
_EN_SUFFIXES = ("ing", "ies", "ied", "ed", "es", "s")
_MIN_STEM = 4


def _stem(keyword: str) -> str:
    for suffix in _EN_SUFFIXES:
        if keyword.endswith(suffix) and len(keyword) - len(suffix) >= _MIN_STEM:
            return keyword[: -len(suffix)]
    return keyword


def _matcher(keyword: str) -> re.Pattern[str]:
    if _is_cjk(keyword):
        return re.compile(re.escape(keyword))
    return re.compile(r"(?<![^\W_])" + re.escape(_stem(keyword)))


def score_doc(doc: MemoryDoc, query_keywords: list[str]) -> float:
    """Keyword score + type weight; 0 when no keyword hits (SPEC §5)."""
    return _score(
        _fold(doc.title), _fold(doc.body), doc.type, [_matcher(k) for k in query_keywords]
    )


def _score(title: str, body: str, doc_type: DocType, matchers: list[re.Pattern[str]]) -> float:
    if not matchers:
        return 0.0
    points = 0
    for matcher in matchers:
        if matcher.search(title):
            points += 2
        elif matcher.search(body):
            points += 1
    if points == 0:
        return 0.0
    return points / (2 * len(matchers)) + doc_type.weight


def best_docs(docs: list[MemoryDoc], query: str, k: int = 5) -> list[tuple[MemoryDoc, float]]:
    """The ``k`` best-scoring docs for ``query`` (score > 0), best first.

    Ties go to the newer doc, then to the title in alphabetical order, so the choice (and the
    system prompt built from it) is stable.
    """
    if k <= 0:
        return []
    matchers = [_matcher(keyword) for keyword in keywords(query)]
    scored = [(doc, _score(_fold(doc.title), _fold(doc.body), doc.type, matchers)) for doc in docs]
    ranked = [(doc, score) for doc, score in scored if score > 0]
    ranked.sort(key=lambda item: item[0].title.casefold())
    ranked.sort(key=lambda item: item[0].created, reverse=True)
    ranked.sort(key=lambda item: item[1], reverse=True)
    return ranked[:k]


# -- the prior-knowledge block ---------------------------------------------------------------

_LABELS = {
    DocType.SPEC: "SPEC",
    DocType.SKILL: "SKILL",
    DocType.LESSON: "LESSON",
    DocType.PLAN: "PLAN",
    DocType.ISSUE: "KNOWN ISSUE",
    DocType.SUMMARY: "CONTEXT",
    DocType.NOTE: "NOTE",
}


def prior_knowledge(
    scored: list[tuple[MemoryDoc, float]],
    max_chars: int = 500,
    *,
    limit: int | None = None,
    max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
) -> PriorKnowledge:
    """The "Prior knowledge" block for ``scored`` docs, fenced as recalled memory.

    Each doc is scanned by the guard (title and whole body); an offender is left out and
    reported in ``blocked``, and the next candidate takes its place: at most ``limit`` docs
    are kept. Each doc's text is cut to ``max_chars`` characters, at a word boundary, with
    "…" when cut. No doc left: the text is empty.
    """
    kept: list[tuple[MemoryDoc, float]] = []
    blocked: list[tuple[MemoryDoc, Threat]] = []
    sections: list[str] = []
    for doc, score in scored:
        if limit is not None and len(kept) >= limit:
            break
        threat = first_threat(f"{doc.title}\n{doc.body}", Scope.RECALL, max_bytes=max_scan_bytes)
        if threat is not None:
            blocked.append((doc, threat))
            continue
        kept.append((doc, score))
        when = f" ({doc.created})" if doc.created else ""
        sections.append(
            f"### [{_LABELS[doc.type]}] {doc.title}{when}\n{_excerpt(doc.body, max_chars)}"
        )
    if not sections:
        return PriorKnowledge("", tuple(kept), tuple(blocked))
    body = (
        "# Prior knowledge\n"
        "Memory docs from earlier sessions that match the user's first message, best first.\n\n"
        + "\n\n".join(sections)
    )
    return PriorKnowledge(fence_recalled(body) + "\n", tuple(kept), tuple(blocked))


def render_prior_knowledge(
    scored: list[tuple[MemoryDoc, float]],
    max_chars: int = 500,
    *,
    max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
) -> str:
    """Just the text of :func:`prior_knowledge` ("" when no doc is left)."""
    return prior_knowledge(scored, max_chars, max_scan_bytes=max_scan_bytes).text


def _excerpt(body: str, max_chars: int) -> str:
    text = body.strip()
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


# -- writing ---------------------------------------------------------------------------------


def write_doc(
    folder: Path,
    doc_type: DocType,
    title: str,
    text: str,
    *,
    today: date | None = None,
    max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
    root: Path | None = None,
) -> Path:
    """Write a new doc (guard-scanned) as ``<date>-<slug>.md``; never overwrites a file.
    With ``root`` the doc is written beneath it, never through a link out of it."""
    doc_type = DocType(doc_type)
    title = title.strip()
    body = text.strip()
    if not title:
        raise DocError("the title is empty")
    if "\n" in title or "\r" in title:
        raise DocError("the title must be one line")
    if not body:
        raise DocError("the text is empty; say what the doc should remember")
    threat = first_threat(f"{title}\n{body}", Scope.MEMORY_WRITE, max_bytes=max_scan_bytes)
    if threat is not None:
        raise DocBlockedError(threat)
    created = (today or date.today()).isoformat()
    content = (
        f"---\ntype: {doc_type.value}\ntitle: {json.dumps(title, ensure_ascii=False)}\n"
        f"created: {created}\n---\n\n{body}\n"
    )
    data = content.encode("utf-8")
    stem = f"{created}-{slug(title)}"
    try:
        if root is None:
            folder.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 1000):
            path = folder / (f"{stem}.md" if attempt == 1 else f"{stem}-{attempt}.md")
            if os.path.lexists(path):
                continue  # a cheap skip; the exclusive write settles a race for the name
            try:
                atomic_write(path, data, mode=0o644, exclusive=True, root=root)
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise DocError(f"cannot write to {folder}: {exc.strerror or exc}") from exc
    raise DocError(f"too many docs named {stem}*.md in {folder}")


def slug(title: str) -> str:
    """A file-name-safe form of a title; letters of any script are kept."""
    words = re.findall(r"[^\W_]+", _fold(title))
    text = "-".join(words)[:60].strip("-")
    return text or "doc"
