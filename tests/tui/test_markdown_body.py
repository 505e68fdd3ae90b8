"""Message bodies draw lists as Textual's stock ``Markdown`` does, with fewer widgets.

A stock list item is a row holding its bullet and a column holding its blocks. Here a list
whose items are each one paragraph (nearly every list a model writes) is one widget, and in
other lists such an item is that paragraph alone, its bullet drawn in its left padding. Each
frame of a streamed reply lays out what is on screen again, and lists were most of a reply's
widgets: the cells drawn and the text a selection copies must be the same, only the widgets
fewer.
"""

from __future__ import annotations

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.selection import SELECT_ALL
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBullet

from agentsh.tui.widgets.markdown_body import markdown
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.asyncio

LISTS = (
    """Some lists:

- a short item with **bold** and `code`
- an item long enough to wrap: """
    + "words " * 30
    + """
- an item with a nested list
  - inside it
  - and `more`
- last

9. nine
10. ten, the bullets are right-aligned
11. eleven

1. a loose list

2. whose items are paragraphs

   with a second paragraph here

A list a model writes:

- alpha, with **bold**, `code` and a [link](https://example.com)
- a line broken here\
  and going on, long enough to wrap: """
    + "words " * 12
    + """
- omega

1. one
2. two
"""
)


class Host(App[None]):
    """``text`` in a message body (``stock``: in Textual's ``Markdown``), in a scrolling view."""

    def __init__(self, text: str, stock: bool = False) -> None:
        super().__init__()
        self.text = text
        self.stock = stock

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(self.text) if self.stock else markdown(self.text)


Cells = list[list[tuple[str, Style | None]]]


async def _drawn(stock: bool, dark: bool = True) -> tuple[Cells, tuple[int, int, int], str]:
    """The cells drawn (text and style), the rows, columns and bullet widgets in the body,
    and the text copied when the whole body is selected."""
    app = Host(LISTS, stock)
    async with app.run_test(size=(70, 60)) as pilot:
        app.theme = "textual-dark" if dark else "textual-light"
        body = app.query_one(Markdown)
        await wait_for(pilot, lambda: len(body.children) == 6)  # paragraphs and lists
        await pilot.pause()
        strips = app.screen._compositor.render_strips()
        cells = [
            [(seg.text, _drawn_style(seg.style)) for seg in strip.simplify()] for strip in strips
        ]
        widgets = (Horizontal, Vertical, MarkdownBullet)
        counts = tuple(len(body.query(kind)) for kind in widgets)
        app.screen.selections = {widget: SELECT_ALL for widget in body.query("*")}
        copied = app.screen.get_selected_text() or ""
        return cells, counts, copied  # type: ignore[return-value]


def _drawn_style(style: Style | None) -> Style | None:
    """The style without the text offsets a cell carries for the mouse (where a click lands
    in the text: a list drawn whole counts its lines from its first item, not each item's)."""
    if style is None or not style._meta:
        return style
    meta = {key: value for key, value in style.meta.items() if key != "offset"}
    return style.clear_meta_and_links() + Style(link=style.link) + Style.from_meta(meta)


def _text(cells: Cells) -> str:
    return "\n".join("".join(text for text, _ in line) for line in cells)


@pytest.mark.parametrize("dark", [True, False], ids=["dark", "light"])
async def test_lists_are_drawn_as_the_stock_widget_draws_them_with_fewer_widgets(
    dark: bool,
) -> None:
    ours, widgets, copied = await _drawn(stock=False, dark=dark)
    stock, stock_widgets, stock_copied = await _drawn(stock=True, dark=dark)
    assert _text(ours) == _text(stock)
    assert ours == stock  # the styles too: the bullets' colour follows the theme
    assert copied == stock_copied and "\n 10.  ten, the" in copied  # a selection copies bullets
    drawn = _text(ours)
    assert "10. ten, the bullets are right-aligned" in drawn and " 9. nine" in drawn
    assert "and more" in drawn and "with a second paragraph here" in drawn
    assert "and going on" in drawn and "1. one" in drawn
    # Sixteen items. The nested list, the last two lists and the nine other items of one
    # paragraph draw no widget of their own; the item holding a list and the one of two
    # paragraphs keep Textual's row, bullet and column.
    assert stock_widgets == (16, 16, 16)
    assert widgets == (2, 2, 2)
