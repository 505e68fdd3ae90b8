"""Query parsing for the memory search: a query becomes words, and words become FTS5 terms.

English words are stemmed and stop words dropped; Chinese is cut into words at common
particles; Japanese and Korean runs are kept whole with their particles and endings stripped.
Words of three characters or more are matched through the trigram index, shorter CJK words by a
substring scan (:meth:`QueryPlan.like_terms`); :meth:`QueryWord.coverage` says how much of a
chunk's text a word finds, which the keyword score weighs.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

from agentsh.text import is_cjk_char

_WORD = re.compile(r"\w+")
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_HIRAGANA = re.compile("[\u3040-\u309f]")
_KATAKANA = re.compile("[\u30a0-\u30ff\u31f0-\u31ff]")


def _wordlist(text: str) -> list[str]:
    return text.split()


_EN_STOP = frozenset(
    _wordlist(
        """a an the and or but if of to in on at by for with from as is are was were be been being
        it its this that these those do does did how what when where which who whom why can could
        should would will shall may might must i we you he she they me my our your their them us
        there here not no so than then too very about into over again just any all some have has
        had get got please tell show me up"""
    )
)
# Whole words that carry no topic; 1-2 character ones would otherwise match half the corpus.
_CJK_STOP = frozenset(
    _wordlist(
        """어떻게 무엇 뭐 뭔가 뭐야 무슨 어떤 언제 어디 어디서 누구 누가 왜 그 이 저 것 거 수
        등 및 때 좀 더 잘 했지 했나 있나 있어 있나요 하나 해 돼 되나 알려줘 알려 뭐였지 였지
        방법 우리 내 제 나 는 은 이야
        何 方法 教 どう どこ いつ 誰
        的 了 是 在 和 与 吗 呢 吧 啊 什么 怎么 怎样 如何 为什么 哪 哪个 哪里 谁 我 我们 你
        你们 他 她 它 这 那 这个 那个 有 没有 要 把 被 用 请 一下"""
    )
)
# Chinese function words cut a run of Han characters into content words.
_HAN_BREAKERS = sorted(
    (w for w in _CJK_STOP if all("\u4e00" <= c <= "\u9fff" for c in w)), key=len, reverse=True
)
_HAN_BREAK_SINGLE = frozenset("的了吗呢吧啊")
# Korean particles and verb endings, longest first: "데이터베이스를" also searches "데이터베이스".
_KO_SUFFIXES = sorted(
    _wordlist(
        """에서는 으로는 에게서 까지는 부터는 이라는 이라고 했습니다 합니다 됩니다 하려면 인가요
        라는 에서 으로 에게 한테 까지 부터 처럼 보다 하고 이나 이랑 께서 에는 하는 했던 했다
        하기 하면 해야 해서 되는 됐다 나요 까요 인가 이야 랑 은 는 이 가 을 를 의 에 로 와 과
        도 만 나 할 한 된 야 요 죠"""
    ),
    key=len,
    reverse=True,
)
_EN_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "ies", "ied", "ed", "es", "s")


class TermMatch(StrEnum):
    FTS = "fts"  # through the trigram index (3+ characters)
    LIKE = "like"  # substring scan (1-2 character CJK words, 2-letter ASCII words)


@dataclass(frozen=True, slots=True)
class QueryWord:
    """One word of the query and the ways a chunk can match it."""

    surface: str  # lowercased, as typed
    stem: str  # particle / suffix stripped (may equal surface)
    trigrams: tuple[str, ...]  # CJK words of 3+ characters: every 3-gram (SPEC §5 rule 3)
    match: TermMatch
    ascii_bounded: bool = False  # a 2-letter ASCII word matches only as a whole word
    # Han runs of 3+ characters are often several Chinese words written together ("王伟周五发布"):
    # their 2-grams, matched by substring, tell which characters a chunk covers.
    bigrams: tuple[str, ...] = ()

    def fts_terms(self) -> list[str]:
        if self.match is not TermMatch.FTS:
            return []
        terms = [self.stem] if len(self.stem) >= 3 else [self.surface]
        terms.extend(self.trigrams)
        return terms

    def like_terms(self) -> list[str]:
        if self.match is TermMatch.LIKE:
            return [self.stem]
        terms = list(self.bigrams)
        if self.trigrams and len(self.stem) < 3:
            terms.append(self.stem)  # "빌드를": trigram of the word, LIKE of the 2-character stem
        return terms

    def coverage(self, text: str) -> float:
        """How well ``text`` (lowercased) holds this word: 1 whole, partly for n-gram hits."""
        if self.ascii_bounded:
            return 1.0 if _bounded(self.stem).search(text) else 0.0
        if self.stem.isascii():
            # English words match at a word start: "set" finds "settings", not "asset".
            return 1.0 if _word_start(self.stem).search(text) else 0.0
        if self.surface in text or self.stem in text:
            return 1.0
        best = 0.0
        if self.trigrams:
            found = sum(1 for g in self.trigrams if g in text)
            best = 0.8 * found / len(self.trigrams)
        if self.bigrams:
            covered: set[int] = set()
            for i in range(len(self.surface) - 1):
                if self.surface[i : i + 2] in text:
                    covered.update((i, i + 1))
            best = max(best, 0.7 * len(covered) / len(self.surface))
        return best


@dataclass(frozen=True, slots=True)
class QueryPlan:
    text: str
    words: tuple[QueryWord, ...]
    non_cjk_letter_share: float  # 1.0 for English, 0.0 for Korean (SPEC §5 rule 2)

    @property
    def empty(self) -> bool:
        return not self.words

    def fts_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for word in self.words:
            for term in word.fts_terms():
                seen.setdefault(term, None)
        return list(seen)

    def like_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for word in self.words:
            for term in word.like_terms():
                seen.setdefault(term, None)
        return list(seen)

    def fts_expression(self) -> str | None:
        """An FTS5 MATCH string: every term a quoted phrase, so no query syntax gets through."""
        terms = self.fts_terms()
        if not terms:
            return None
        return " OR ".join(_quote_fts(t) for t in terms)


def _quote_fts(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


# "No letter or digit before the word" is checked after the word, by looking back over it and
# one character more: a pattern that starts with the word's letters is searched for at C speed
# (a leading look-behind is tried at every position: 16x slower over a search's candidates).


@functools.lru_cache(maxsize=512)
def _bounded(word: str) -> re.Pattern[str]:
    w = re.escape(word)
    return re.compile(rf"{w}(?<![a-z0-9]{w})(?![a-z0-9])")


@functools.lru_cache(maxsize=512)
def _word_start(word: str) -> re.Pattern[str]:
    w = re.escape(word)
    return re.compile(rf"{w}(?<![a-z0-9]{w})")


def _script(char: str) -> str:
    if not is_cjk_char(char):
        return "latin"
    if _HANGUL.match(char):
        return "hangul"
    if _HIRAGANA.match(char):
        return "hiragana"
    if _KATAKANA.match(char):
        return "katakana"
    return "han"


def _runs(word: str) -> list[tuple[str, str]]:
    """Split a word where the script changes: ``pytest가`` -> pytest, 가."""
    runs: list[tuple[str, str]] = []
    for char in word:
        script = _script(char)
        if runs and runs[-1][0] == script:
            runs[-1] = (script, runs[-1][1] + char)
        else:
            runs.append((script, char))
    return runs


def _split_han(run: str) -> list[str]:
    """Cut a Han run at Chinese function words: 我们的数据库迁移 -> 数据库迁移."""
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(run):
        breaker = next((b for b in _HAN_BREAKERS if run.startswith(b, i)), None)
        if breaker is None and run[i] in _HAN_BREAK_SINGLE:
            breaker = run[i]
        if breaker is not None:
            if current:
                parts.append(current)
            current = ""
            i += len(breaker)
            continue
        current += run[i]
        i += 1
    if current:
        parts.append(current)
    return parts


def _en_stem(word: str) -> str:
    for suffix in _EN_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _ko_stem(word: str) -> str:
    for suffix in _KO_SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)]
    return word


def _cjk_word(run: str, stem: str, *, han: bool = False) -> QueryWord:
    if len(stem) <= 2 and len(run) <= 2:
        return QueryWord(surface=run, stem=stem, trigrams=(), match=TermMatch.LIKE)
    grams = {run[i : i + 3] for i in range(len(run) - 2)}
    grams.update(stem[i : i + 3] for i in range(len(stem) - 2))
    bigrams = tuple(sorted({run[i : i + 2] for i in range(len(run) - 1)})) if han else ()
    return QueryWord(
        surface=run,
        stem=stem,
        trigrams=tuple(sorted(grams)),
        match=TermMatch.FTS,
        bigrams=bigrams,
    )


def parse_query(query: str) -> QueryPlan:
    """Turn user text into words to match; never raises, whatever the text holds."""
    text = unicodedata.normalize("NFKC", query).lower()
    letters = [c for c in text if c.isalpha()]
    share = sum(1 for c in letters if not is_cjk_char(c)) / len(letters) if letters else 1.0
    words: list[QueryWord] = []
    dropped: list[QueryWord] = []  # stop words, used only if nothing else is left
    for token in _WORD.findall(text):
        runs = _runs(token)
        mixed = len(runs) > 1
        for script, run in runs:
            for word, stop in _words_of_run(script, run, attached=mixed):
                (dropped if stop else words).append(word)
    if not words:
        words = dropped
    unique: dict[tuple[str, str], QueryWord] = {}
    for word in words:
        unique.setdefault((word.surface, word.stem), word)
    return QueryPlan(text=query, words=tuple(unique.values()), non_cjk_letter_share=share)


def _words_of_run(script: str, run: str, *, attached: bool) -> list[tuple[QueryWord, bool]]:
    """The query words of one single-script run, each with a flag "is a stop word"."""
    out: list[tuple[QueryWord, bool]] = []
    match script:
        case "latin":
            if len(run) < 2 and not run.isdigit():
                return out
            stop = run in _EN_STOP
            if len(run) == 2:
                word = QueryWord(run, run, (), TermMatch.LIKE, ascii_bounded=run.isascii())
            else:
                word = QueryWord(run, _en_stem(run), (), TermMatch.FTS)
            out.append((word, stop))
        case "hangul":
            stem = _ko_stem(run)
            # A lone syllable stuck to a Latin word ("pytest가") is a particle.
            stop = run in _CJK_STOP or stem in _CJK_STOP or (attached and len(run) == 1)
            out.append((_cjk_word(run, stem), stop))
        case "hiragana":
            # Hiragana runs in a query are particles and okurigana: keep them only as a fallback.
            out.append((_cjk_word(run, run), True))
        case "han":
            parts = _split_han(run)
            for part in parts:
                out.append((_cjk_word(part, part, han=True), part in _CJK_STOP))
            if not parts:  # the run is a function word: kept only as a fallback
                out.append((_cjk_word(run, run), True))
        case _:  # katakana
            out.append((_cjk_word(run, run), run in _CJK_STOP))
    return out
