"""The scan: every pattern of a scope over a prepared text."""

from __future__ import annotations

from collections.abc import Iterable

from .matching import _Doc
from .patterns import PATTERNS
from .phrases import _CJK_RULES, phrase_hits
from .reading import _hidden, _hidden_bidi, _hidden_tags, _prepare
from .threats import DEFAULT_MAX_SCAN_BYTES, Scope, Threat, _excerpt, _shorten


def scan(text: str, scope: Scope, *, max_bytes: int = DEFAULT_MAX_SCAN_BYTES) -> list[Threat]:
    """Every pattern of ``scope`` that matches ``text`` (at most one threat per pattern).

    An empty list means the text is clean. Nothing is ever trusted by its look: text that
    already starts with ``[BLOCKED:`` is scanned like any other.
    """
    return list(_scan(text, scope, max_bytes, stop_at_first=False))


def first_threat(
    text: str, scope: Scope, *, max_bytes: int = DEFAULT_MAX_SCAN_BYTES
) -> Threat | None:
    """The first threat found, or ``None``; cheaper than :func:`scan` on a hit."""
    return next(iter(_scan(text, scope, max_bytes, stop_at_first=True)), None)


def _scan(text: str, scope: Scope, max_bytes: int, *, stop_at_first: bool) -> Iterable[Threat]:
    threats: list[Threat] = []
    prepared = _prepare(text, max_bytes)
    if prepared.special:  # NFKC keeps invisible characters, so this also covers the raw text
        # In tool output a BOM or a zero-width space is ordinary (Windows files, i18n data) and
        # hides no order (the patterns read past them); text spelled in tag characters does,
        # and a bidi override shows the reader another text than the one there.
        hidden = (
            _hidden_tags(prepared.scanned, prepared.tags) or _hidden_bidi(prepared)
            if scope is Scope.TOOL_OUTPUT
            else _hidden(prepared)
        )
        if hidden is not None:
            threats.append(hidden)
            if stop_at_first:
                return threats
    doc = _Doc(prepared.projected)
    # The CJK rules read only the lines that are not ASCII (their gaps never cross a line), so
    # a few Korean lines in 64 KiB of source cost a search of those lines, not of everything.
    cjk_lines = prepared.foreign
    if prepared.cyrillic:
        cjk_lines = cjk_lines.lower()  # the Russian rules are lowercase; CJK has no case
    # Where the rules' anchors are, looked up once a rule runs (None: the rules look).
    hits: dict[str, list[int]] | None = None
    looked = False
    for pattern in PATTERNS:
        if scope not in pattern.scopes:
            continue
        shown = prepared.shown
        span = pattern.search(doc)
        rules = _CJK_RULES.get(pattern.name, ()) if cjk_lines else ()
        if span is None and rules:
            shown = cjk_lines
            if not looked:
                hits, looked = phrase_hits(cjk_lines), True
            span = next(
                (
                    found
                    for rule in rules
                    if (prepared.cyrillic or not rule.cyrillic)
                    and (found := rule.search(cjk_lines, hits)) is not None
                ),
                None,
            )
        if span is not None:
            excerpt = _excerpt(shown, *span)
            threats.append(Threat(pattern.name, pattern.description, excerpt))
            if stop_at_first:
                return threats
    if prepared.truncated:
        size = len(text.encode("utf-8", "surrogatepass"))
        threats.append(
            Threat(
                "oversized",
                f"text of {size:,} bytes is over the {max_bytes:,}-byte scan limit; only its "
                "head and tail were checked",
                _shorten(text[:60]),
            )
        )
    return threats


def blocked_note(threat: Threat) -> str:
    """What replaces a blocked entry in the system prompt."""
    return f"[BLOCKED: {threat.name}]"
