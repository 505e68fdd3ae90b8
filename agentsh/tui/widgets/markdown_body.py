"""A message body: Textual's ``Markdown`` with its blocks built at compose time, and lists
drawn with fewer widgets.

:func:`markdown` builds the body of every message: its blocks are composed with the widget,
so a screenful of messages mounts in one pass (a resume or a branch switch paints without a
frame of empty bodies), and a streamed reply appends to it (``Markdown.append``, one shared
parser). The blocks are Textual's, except that table columns keep the alignment written
(``|--:|``) and lists are drawn with fewer widgets (:mod:`agentsh.tui.widgets.markdown_lists`).
A streamed reply's body and the same text from the log are built by the same classes, so a
finished reply shows what a resume shows.
"""

from __future__ import annotations

import contextlib
from functools import cache
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.content import Content

from agentsh.tui.widgets.steady_containers import AlikeRows, MeasuredArrangement

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownBlock

INLINE_PARSE_CHARS = 20_000  # longer text is parsed the stock way, off the UI thread


def markdown(text: str, classes: str = "") -> Markdown:
    """A message body: Textual's ``Markdown``, with its blocks built at compose time.

    The stock widget parses in a thread once mounted and then mounts its blocks in a second
    pass, so each message costs a thread hop and two mounts, and a freshly mounted screenful
    shows empty bodies for a frame or more. Short text (nearly every message) is parsed here
    with one shared parser, which takes well under a millisecond."""
    # Imported on first use: markdown-it and pygments are not needed for the first frame.
    if len(text) > INLINE_PARSE_CHARS:
        return _markdown_class()(text, classes=classes)
    return _composed_markdown_class()(text, classes=classes)


def _alignment(style: object) -> str:
    """``"text-align:right"`` (markdown-it's attribute for ``|--:|``) -> ``"right"``."""
    value = str(style or "").replace(" ", "").lower()
    for side in ("right", "center"):
        if f"text-align:{side}" in value:
            return side
    return "left"


@cache
def _blocks() -> dict[str, type[MarkdownBlock]]:
    """Textual's markdown blocks, with table columns aligned as written (``|--:|`` right,
    ``|:-:|`` centre): the stock table sets every cell left."""
    from textual.widgets import Markdown
    from textual.widgets._markdown import (
        MarkdownBlock,
        MarkdownBulletList,
        MarkdownListItem,
        MarkdownOrderedList,
        MarkdownOrderedListItem,
        MarkdownTable,
        MarkdownTableContent,
        MarkdownTH,
    )

    from agentsh.tui.widgets.markdown_lists import BULLET, BULLET_CSS, WholeList

    class AlignedTableContent(MarkdownTableContent):
        def __init__(self, headers: list[Content], rows: list[list[Content]], aligns: list[str]):
            super().__init__(headers, rows)
            self.aligns = aligns

        def on_mount(self) -> None:
            self._align()

        async def _update_rows(self, updated_rows: list[list[Content]]) -> None:
            await super()._update_rows(updated_rows)  # a streamed table grows
            self._align()

        def _align(self) -> None:
            columns = len(self.headers)
            if not columns or all(a == "left" for a in self.aligns):
                return
            for index, cell in enumerate(self.children):
                column = index % columns
                if column < len(self.aligns):
                    cell.styles.text_align = self.aligns[column]  # type: ignore[assignment]

    class AlignedTable(MarkdownTable):
        def compose(self) -> ComposeResult:
            headers, rows = self._get_headers_and_rows()
            self._headers, self._rows = headers, rows
            aligns: list[str] = []

            def walk(block: MarkdownBlock) -> None:
                for child in block._blocks:
                    if isinstance(child, MarkdownTH):
                        aligns.append(_alignment(child._token.attrGet("style")))
                    walk(child)

            walk(self)
            yield AlignedTableContent(headers, rows, aligns)

    class CompactBulletList(WholeList, MarkdownBulletList):
        COMPONENT_CLASSES = MarkdownBlock.COMPONENT_CLASSES | {BULLET}
        DEFAULT_CSS = BULLET_CSS.replace("WIDGET", "CompactBulletList")

        def _symbols(self, items: Sequence[MarkdownBlock]) -> list[str]:
            return [cast(MarkdownListItem, item).bullet for item in items]

    class CompactOrderedList(WholeList, MarkdownOrderedList):
        COMPONENT_CLASSES = MarkdownBlock.COMPONENT_CLASSES | {BULLET}
        DEFAULT_CSS = BULLET_CSS.replace("WIDGET", "CompactOrderedList")

        def _symbols(self, items: Sequence[MarkdownBlock]) -> list[str]:
            start = 1
            if items and isinstance(items[0], MarkdownOrderedListItem):
                with contextlib.suppress(ValueError):
                    start = int(items[0].bullet)
            width = max((len(f"{n}. ") for n in range(start, start + len(items))), default=0)
            return [f"{n}. ".rjust(width + 1) for n in range(start, start + len(items))]

    return {
        **Markdown.BLOCKS,
        "table_open": AlignedTable,
        "bullet_list_open": CompactBulletList,
        "ordered_list_open": CompactOrderedList,
    }


@cache
def _markdown_class() -> type[Markdown]:
    """The stock ``Markdown`` (it parses off the UI thread), for very long text."""
    from textual.widgets import Markdown

    class AgentshMarkdown(MeasuredArrangement, AlikeRows, Markdown):
        BLOCKS = _blocks()

    return AgentshMarkdown


@cache
def _composed_markdown_class() -> type[Markdown]:
    from markdown_it import MarkdownIt
    from textual.events import Mount
    from textual.widget import Widget
    from textual.widgets import Markdown

    parser = MarkdownIt("gfm-like")  # what the stock widget parses with; shared, it keeps no state

    class ComposedMarkdown(MeasuredArrangement, AlikeRows, Markdown):
        """``Markdown`` whose blocks are children from the start (streaming and ``update``
        work as in the stock widget: the source and the parsed line count are set)."""

        BLOCKS = _blocks()

        def __init__(self, markdown: str | None = None, *, classes: str | None = None) -> None:
            # The stock widget builds a parser per append: one per streamed frame.
            super().__init__(markdown, classes=classes, parser_factory=lambda: parser)

        def compose(self) -> ComposeResult:
            text = self._initial_markdown or ""
            self._initial_markdown = None
            self._markdown = text
            lines = text.splitlines()
            # As Markdown.update leaves it, so a stream appended later starts right.
            self._last_parsed_line = len(lines) - (1 if lines and lines[-1] else 0)
            yield from self._parse_markdown(parser.parse(text))

        async def _on_mount(self, event: Mount) -> None:  # type: ignore[override]  # as Markdown's
            # The blocks exist already: skip the stock parse-and-mount (and its empty frame)
            # but not what every widget does on mount.
            event.prevent_default()
            Widget._on_mount(self, event)

    return ComposedMarkdown  # CSS type selectors match base class names: `Markdown` rules apply
