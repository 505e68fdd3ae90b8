"""A message body: Textual's ``Markdown`` with its blocks built at compose time, and lists
with one widget per item.

:func:`markdown` builds the body of every message: its blocks are composed with the widget,
so a screenful of messages mounts in one pass (a resume or a branch switch paints without a
frame of empty bodies), and a streamed reply appends to it (``Markdown.append``, one shared
parser). The blocks are Textual's, except that table columns keep the alignment written
(``|--:|``) and a list item made of one paragraph is that paragraph alone, its bullet drawn
in its left padding, not a row holding a bullet and a column (:func:`_list_item`). A
streamed reply's body and the same text from the log are built by the same classes, so a
finished reply shows what a resume shows.
"""

from __future__ import annotations

import contextlib
from functools import cache
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.content import Content

from agentsh.tui.widgets.steady_containers import AlikeRows, MeasuredArrangement

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual.widget import Widget
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownBlock, MarkdownParagraph

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
        MarkdownBulletList,
        MarkdownListItem,
        MarkdownOrderedList,
        MarkdownOrderedListItem,
        MarkdownTable,
        MarkdownTableContent,
        MarkdownTH,
    )

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

    class CompactBulletList(MarkdownBulletList):
        def compose(self) -> ComposeResult:
            for item in self._blocks:
                if isinstance(item, MarkdownListItem):
                    yield _list_item(item, item.bullet)
            self._blocks.clear()

    class CompactOrderedList(MarkdownOrderedList):
        def compose(self) -> ComposeResult:
            start = 1
            if self._blocks and isinstance(self._blocks[0], MarkdownOrderedListItem):
                with contextlib.suppress(ValueError):
                    start = int(self._blocks[0].bullet)
            items = [b for b in self._blocks if isinstance(b, MarkdownListItem)]
            width = max((len(f"{n}. ") for n in range(start, start + len(items))), default=0)
            for number, item in enumerate(items, start):
                yield _list_item(item, f"{number}. ".rjust(width + 1))
            self._blocks.clear()

    return {
        **Markdown.BLOCKS,
        "table_open": AlignedTable,
        "bullet_list_open": CompactBulletList,
        "ordered_list_open": CompactOrderedList,
    }


def _list_item(item: MarkdownBlock, symbol: str) -> Widget:
    """A list item: its one paragraph with the bullet drawn beside it (the usual item), else
    Textual's row of a bullet and a column of the item's blocks.

    Textual makes every item a row holding a bullet widget and a column with the item's
    blocks: four widgets per item, and two levels more for each layout to measure. A streamed
    reply's lists were most of its widgets, each frame lays out and draws what is on screen
    again, and a list that grows is mounted anew at each frame. The one paragraph is drawn in
    the same cells: the bullet's width as its left padding, the bullet drawn there."""
    from textual.containers import Horizontal, Vertical
    from textual.widgets._markdown import MarkdownBullet, MarkdownParagraph

    blocks = item._blocks
    if len(blocks) == 1 and type(blocks[0]) is MarkdownParagraph:
        return _bulleted_paragraph_class()(blocks[0], symbol)
    bullet = MarkdownBullet()
    bullet.symbol = symbol
    return Horizontal(bullet, Vertical(*blocks))


@cache
def _bulleted_paragraph_class() -> Callable[[MarkdownParagraph, str], Widget]:
    from rich.cells import cell_len
    from rich.segment import Segment
    from textual.geometry import Offset, Region, Spacing
    from textual.selection import Selection
    from textual.strip import Strip
    from textual.widgets._markdown import MarkdownBlock, MarkdownParagraph

    class BulletedParagraph(MarkdownParagraph):
        """A list item's paragraph, its bullet drawn in its left padding (styled as Textual
        styles a ``MarkdownBullet``)."""

        COMPONENT_CLASSES = MarkdownBlock.COMPONENT_CLASSES | {"bulleted-paragraph--bullet"}
        DEFAULT_CSS = """
        BulletedParagraph > .bulleted-paragraph--bullet { color: $text-primary; }
        BulletedParagraph:light > .bulleted-paragraph--bullet { color: $text-secondary; }
        """

        def __init__(self, paragraph: MarkdownParagraph, symbol: str) -> None:
            super().__init__(paragraph._markdown, paragraph._token, paragraph.source_range)
            self._inline_token = paragraph._inline_token
            self.set_content(paragraph._content)
            self.symbol = symbol
            self.styles.padding = Spacing(0, 0, 0, cell_len(symbol))

        def render_lines(self, crop: Region) -> list[Strip]:
            lines = super().render_lines(crop)
            width = self.styles.padding.left
            if crop.x >= width or not lines:
                return lines
            # As a bullet widget draws it: the symbol on the first row (where a click or a
            # selection starts at the paragraph's first character), its colour on blank rows
            # below.
            style = self.get_visual_style("bulleted-paragraph--bullet").rich_style
            end = min(width, crop.right)
            rows = [Segment(self.symbol, style), Segment(" " * width, style)]
            column = [Strip([rows[0]]).apply_offsets(0, 0), Strip([rows[1]])]
            for index, y in enumerate(crop.line_range):
                bullet = column[min(y, 1)].crop(crop.x, end)
                lines[index] = Strip.join([bullet, lines[index].crop(bullet.cell_length)])
            return lines

        def get_selection(self, selection: Selection) -> tuple[str, str] | None:
            got = super().get_selection(selection)
            if got is None or selection.start not in (None, Offset(0, 0)):
                return got
            return f"{self.symbol} {got[0]}", got[1]  # as the bullet widget's text and ending

    return BulletedParagraph


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
