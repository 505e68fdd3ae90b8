"""Message bodies draw lists as Textual's stock ``Markdown`` does, with a widget fewer per item.

A stock list item is a row holding its bullet and a column holding its blocks; an item made
of one paragraph (nearly every item a model writes) is that paragraph beside its bullet here.
Each frame of a streamed reply lays out what is on screen again, and lists were most of a
reply's widgets: the cells drawn must be the same, only the widgets fewer.
"""

from __future__ import annotations

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBullet, MarkdownParagraph

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
"""
)


class Host(App[None]):
    def __init__(self, stock: bool) -> None:
        super().__init__()
        self.stock = stock

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(LISTS) if self.stock else markdown(LISTS)


async def _drawn(stock: bool) -> tuple[list[list[tuple[str, Style | None]]], int, int]:
    """The cells drawn (text and style), the columns in the body, and the paragraphs that
    sit beside their bullet."""
    app = Host(stock)
    async with app.run_test(size=(70, 60)) as pilot:
        body = app.query_one(Markdown)
        await wait_for(pilot, lambda: len(body.query(MarkdownBullet)) == 11)
        await pilot.pause()
        strips = app.screen._compositor.render_strips()
        cells = [[(seg.text, seg.style) for seg in strip.simplify()] for strip in strips]
        beside = [
            p
            for p in body.query(MarkdownParagraph)
            if p.parent is not None and isinstance(p.parent.children[0], MarkdownBullet)
        ]
        return cells, len(body.query(Vertical)), len(beside)


async def test_lists_are_drawn_as_the_stock_widget_draws_them_with_fewer_widgets() -> None:
    ours, columns, beside = await _drawn(stock=False)
    stock, stock_columns, stock_beside = await _drawn(stock=True)
    assert [[text for text, _ in line] for line in ours] == [
        [text for text, _ in line] for line in stock
    ]
    assert ours == stock  # the styles too
    drawn = "\n".join("".join(text for text, _ in line) for line in ours)
    assert "10. ten, the bullets are right-aligned" in drawn and " 9. nine" in drawn
    assert "and more" in drawn and "with a second paragraph here" in drawn
    # Eleven items: nine of one paragraph lost their column; the item holding a list and the
    # one of two paragraphs kept theirs.
    assert (stock_columns, stock_beside) == (11, 0)
    assert (columns, beside) == (2, 9)
