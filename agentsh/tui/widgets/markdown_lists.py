"""Markdown lists drawn with fewer widgets, in the cells Textual's stock lists are drawn in.

Textual makes every list item a row holding a bullet widget and a column with the item's
blocks: four widgets per item. A streamed reply's lists were most of its widgets, each frame
lays out and draws what is on screen again, and a list that grows as it streams is mounted
anew at each frame. Here:

* a list whose items are each one paragraph (nearly every list a model writes) is one widget
  that draws its items itself (:class:`ListItems`): each item's text wrapped beside its bullet,
  as the paragraph beside the bullet widget was. A list that grows while it streams takes its
  new items in place, without a mount;
* in any other list, an item of one paragraph is that paragraph, its bullet drawn in its
  left padding (:func:`list_item`), and an item of several blocks keeps Textual's row.

The text a selection copies is the stock list's: each item's bullet, a space, its text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual

if TYPE_CHECKING:
    from textual.app import ComposeResult
    from textual.css.styles import RulesMap
    from textual.widget import Widget
    from textual.widgets._markdown import MarkdownBlock, MarkdownParagraph

    _Mixin = MarkdownBlock
else:
    _Mixin = object  # a plain mixin at run time, listed before the list class it serves

BULLET = "markdown-list--bullet"  # the component class that styles bullets as Textual's
# ... as Textual colours its ``MarkdownBullet`` (WIDGET: the class that draws them).
BULLET_CSS = f"""
WIDGET > .{BULLET} {{ color: $text-primary; }}
WIDGET:light > .{BULLET} {{ color: $text-secondary; }}
"""


@dataclass(frozen=True, slots=True)
class Item:
    """One item of a list drawn whole: its bullet, its paragraph's text, and the line of the
    list's text where it starts (a selection's offsets count lines of the whole list)."""

    symbol: str
    text: Content
    line: int

    @property
    def lines(self) -> int:
        return self.text.plain.count("\n") + 1


def items_of(symbols: Sequence[str], paragraphs: Sequence[Content]) -> list[Item]:
    """The items of a list drawn whole, each told the line of the list it starts on."""
    items: list[Item] = []
    line = 0
    for symbol, text in zip(symbols, paragraphs, strict=True):
        items.append(Item(symbol, text, line))
        line += items[-1].lines
    return items


class ListItems(Visual):
    """A list's items drawn as Textual draws a row of a bullet and a paragraph: the bullet on
    the item's first row, in the bullet's colour; below it, blank cells of that colour; the
    paragraph wrapped to the width left, padded to it."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = tuple(items)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max(
            (
                cell_len(item.symbol)
                + item.text.get_optimal_width(rules, container_width - cell_len(item.symbol))
                for item in self.items
            ),
            default=0,
        )

    def get_height(self, rules: RulesMap, width: int) -> int:
        return sum(
            max(1, item.text.get_height(rules, _text_width(item, width))) for item in self.items
        )

    def render_strips(
        self, width: int, height: int | None, style: Style, options: RenderOptions
    ) -> list[Strip]:
        padding = Style(background=style.background).rich_style  # as a paragraph's row ends
        bullet_style = style + options.get_style(f".{BULLET}")
        strips: list[Strip] = []
        for item in self.items:
            text_width = _text_width(item, width)
            local = RenderOptions(
                options.get_style,
                options.rules,
                _within(options.selection, item),
                options.selection_style,
                options.post_style,
            )
            rows = item.text.render_strips(text_width, None, style, local) or [Strip([])]
            bullet = [Segment(item.symbol, bullet_style.rich_style_with_offset(0, item.line))]
            blank = [Segment(" " * cell_len(item.symbol), bullet_style.rich_style)]
            for row, strip in enumerate(rows):
                text = _moved_down(strip, item.line).extend_cell_length(text_width, padding)
                strips.append(Strip.join([Strip(bullet if row == 0 else blank), text]))
        return strips if height is None else strips[:height]


def _text_width(item: Item, width: int) -> int:
    return max(width - cell_len(item.symbol), 1)


def _within(selection: Selection | None, item: Item) -> Selection | None:
    """The part of a selection of the whole list that falls in ``item``, in its own lines."""
    if selection is None:
        return None
    start, end = selection
    first, last = item.line, item.line + item.lines - 1
    if (end is not None and end.y < first) or (start is not None and start.y > last):
        return None
    return Selection(
        None if start is None or start.y < first else Offset(start.x, start.y - first),
        None if end is None or end.y > last else Offset(end.x, end.y - first),
    )


def _moved_down(strip: Strip, lines: int) -> Strip:
    """``strip`` with the text offsets its cells carry (where a click lands in the text)
    counted from the list's first line, not the item's."""
    if not lines:
        return strip
    segments: list[Segment] = []
    for text, style, control in strip:
        meta = style.meta if style is not None and style._meta is not None else {}
        if "offset" in meta:
            x, y = meta["offset"]
            style = style + RichStyle.from_meta({"offset": (x, y + lines)})  # type: ignore[operator]
        segments.append(Segment(text, style, control))
    return Strip(segments, strip.cell_length)


def copied(items: Sequence[Item], selection: Selection) -> str:
    """What a selection of the list copies: each item's text selected, after its bullet and a
    space when the selection takes the item from its start (a bullet widget's text and
    ending)."""
    parts: list[str] = []
    for item in items:
        local = _within(selection, item)
        if local is None:
            continue
        text = local.extract(item.text.plain)
        parts.append(f"{item.symbol} {text}" if local.start is None else text)
    return "\n".join(parts)


def single_paragraphs(items: Sequence[MarkdownBlock]) -> list[Content] | None:
    """Each item's one paragraph's text, or None if an item holds anything else."""
    paragraphs = [_one_paragraph(item) for item in items]
    if None in paragraphs:
        return None
    return [paragraph._content for paragraph in paragraphs if paragraph is not None]


def list_item(item: MarkdownBlock, symbol: str) -> Widget:
    """An item of a list not drawn whole: its one paragraph with the bullet drawn in its left
    padding, else Textual's row of a bullet and a column of the item's blocks."""
    from textual.containers import Horizontal, Vertical
    from textual.widgets._markdown import MarkdownBullet

    paragraph = _one_paragraph(item)
    if paragraph is not None:
        return bulleted_paragraph_class()(paragraph, symbol)
    bullet = MarkdownBullet()
    bullet.symbol = symbol
    return Horizontal(bullet, Vertical(*item._blocks))


def _one_paragraph(item: MarkdownBlock) -> MarkdownParagraph | None:
    from textual.widgets._markdown import MarkdownParagraph

    blocks = item._blocks
    if len(blocks) == 1 and type(blocks[0]) is MarkdownParagraph:
        return blocks[0]
    return None


@cache
def bulleted_paragraph_class() -> Callable[[MarkdownParagraph, str], Widget]:
    from textual.geometry import Region, Spacing
    from textual.widgets._markdown import MarkdownBlock, MarkdownParagraph

    class BulletedParagraph(MarkdownParagraph):
        """A list item's paragraph, its bullet drawn in its left padding."""

        COMPONENT_CLASSES = MarkdownBlock.COMPONENT_CLASSES | {BULLET}
        DEFAULT_CSS = BULLET_CSS.replace("WIDGET", "BulletedParagraph")

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
            style = self.get_visual_style(BULLET).rich_style
            rows = [Segment(self.symbol, style), Segment(" " * width, style)]
            column = [Strip([rows[0]]).apply_offsets(0, 0), Strip([rows[1]])]
            end = min(width, crop.right)
            for index, y in enumerate(crop.line_range):
                bullet = column[min(y, 1)].crop(crop.x, end)
                lines[index] = Strip.join([bullet, lines[index].crop(bullet.cell_length)])
            return lines

        def get_selection(self, selection: Selection) -> tuple[str, str] | None:
            return copied([Item(self.symbol, self._content, 0)], selection), "\n"

    return BulletedParagraph


class WholeList(_Mixin):
    """A Markdown list drawn by one widget when its items are each one paragraph; the list
    classes of :mod:`agentsh.tui.widgets.markdown_body` say how items are numbered."""

    _items: list[Item] | None = None  # drawn whole: its items

    def _symbols(self, items: Sequence[MarkdownBlock]) -> list[str]:
        raise NotImplementedError

    def _list_items(self) -> list[MarkdownBlock]:
        from textual.widgets._markdown import MarkdownListItem

        return [block for block in self._blocks if isinstance(block, MarkdownListItem)]

    def _whole(self) -> list[Item] | None:
        items = self._list_items()
        texts = single_paragraphs(items)
        return None if texts is None else items_of(self._symbols(items), texts)

    def compose(self) -> ComposeResult:
        whole = self._whole()
        if whole is not None:
            self._draw(whole)
        else:
            items = self._list_items()
            yield from map(list_item, items, self._symbols(items))
        self._blocks.clear()

    def _draw(self, items: list[Item]) -> None:
        self._items = items
        self.update(ListItems(items))
        # Drawn at compose, the list may have been measured already (a layout between its
        # mount and its compose: seen under load), and a refresh before the mount ends keeps
        # what it measured (its empty text, one row: the first item alone on screen).
        self._layout_cache.clear()  # the visual measured
        self.clear_cached_dimensions()

    async def _update_from_block(self, block: MarkdownBlock) -> None:
        """A list that grew as it streamed takes its new items in place (Textual mounts the
        list anew, every item's widgets with it, at each frame)."""
        if self._items is not None and type(block) is type(self):
            assert isinstance(block, WholeList)
            whole = block._whole()
            if whole is not None:
                self._token = block._token
                self._draw(whole)
                return
        await super()._update_from_block(block)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        if self._items is None:
            return super().get_selection(selection)
        # A list taken from its start copies as Textual's: the list widget's empty text and
        # ending, then each item's.
        start = "\n" if selection.start is None else ""
        return start + copied(self._items, selection), "\n"
