"""A list of one-paragraph items is one widget: a click, a selection and a stream act on it as
on Textual's list (``test_markdown_body`` compares the cells and the copied text)."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from textual.app import App
from textual.containers import Horizontal
from textual.geometry import Offset, Size
from textual.selection import Selection
from textual.widgets import Markdown

from agentsh.tui.widgets.markdown_lists import WholeList
from tests.tui.conftest import wait_for
from tests.tui.test_markdown_body import Host

pytestmark = pytest.mark.asyncio

LIST = "- alpha\n- beta gamma\n- delta\n"


def _whole(app: App[None]) -> WholeList:
    return next(w for w in app.query_one(Markdown).children if isinstance(w, WholeList))


def _row(app: App[None], text: str) -> tuple[int, int]:
    """The screen row that shows ``text``, and the column it starts at."""
    for y, strip in enumerate(app.screen._compositor.render_strips()):
        if (x := strip.text.find(text)) >= 0:
            return x, y
    raise AssertionError(f"{text!r} is not on screen")


async def test_a_click_in_an_item_lands_on_its_line_of_the_list() -> None:
    app = Host(LIST)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        whole = _whole(app)
        assert not whole.children  # the items are drawn, not mounted
        x, y = _row(app, "beta gamma")
        widget, offset = app.screen.get_widget_and_offset_at(x + 2, y)
        assert widget is whole and offset == Offset(2, 1)  # "t" of "beta": line 1 of the list
        x, y = _row(app, "delta")
        assert app.screen.get_widget_and_offset_at(x, y) == (whole, Offset(0, 2))


async def test_a_selection_copies_the_items_it_takes_with_their_bullets() -> None:
    app = Host(LIST)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        whole = _whole(app)
        # From the "t" of "beta" to the "l" of "delta": the first item is not taken, the
        # second from its third character, the third from its start (bullet and all).
        assert whole.get_selection(Selection(Offset(2, 1), Offset(3, 2))) == (
            "ta gamma\n•  del",
            "\n",
        )
        assert whole.get_selection(Selection(None, Offset(5, 0))) == ("\n•  alpha", "\n")


async def test_a_list_that_grows_as_it_streams_takes_its_items_in_place() -> None:
    app = Host("Steps:\n")
    async with app.run_test(size=(40, 12)) as pilot:
        body = app.query_one(Markdown)
        await body.append("\n- one\n")
        await pilot.pause()
        whole = _whole(app)
        await body.append("- two\n")
        await body.append("- three\n")
        await pilot.pause()
        assert _whole(app) is whole  # not mounted anew
        assert body.children[-1] is whole and not whole.children
        _row(app, "• three")
        # An item that is more than one paragraph: the list is built Textual's way.
        await body.append("  - nested\n")
        await wait_for(pilot, lambda: bool(body.query(Horizontal)))
        await pilot.pause()
        assert whole not in body.children
        _row(app, "• three")
        _row(app, "▪ nested")


async def test_a_list_measured_before_it_is_composed_is_measured_again() -> None:
    """Under load a layout can come between a list's mount and its compose: the height it
    measured then (its empty text: one row) must not stay."""
    app = Host("")
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        body = app.query_one(Markdown)
        whole = next(iter(body._parse_markdown(MarkdownIt("gfm-like").parse(LIST))))
        size = Size(40, 10)
        assert whole.get_content_height(size, size, 40) == 1  # measured before its compose
        assert not list(whole.compose())  # drawn: no children
        assert whole.get_content_height(size, size, 40) == 3
