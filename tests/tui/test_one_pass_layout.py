"""A layout that resizes widgets is followed by no second layout, and what it skipped is not
missed: a scrollbar that comes still re-wraps the text beside it, and the screen shows what a
fresh paint would.

Counts and cells, not times: the screen's layouts (``Screen._refresh_layout``) are counted
once a change has settled, and the cells painted (every update the compositor rendered,
applied to a buffer) are compared with the screen painted from scratch; no load on the
machine changes either.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual._compositor import ChopsUpdate, LayoutUpdate
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static

from agentsh.tui.one_pass_layout import OnePassScreen
from agentsh.tui.widgets.messages import AssistantMessage
from tests.tui.conftest import MakeApp, fake_factory, ready, submit, wait_for
from tests.tui.test_stream_render_loop import REPLY, streamed

pytestmark = pytest.mark.asyncio

LINE = "a line of a reply that grows as it streams in"


class Host(App[None]):
    """A following view of one growing text, on the screen class under test."""

    def __init__(self, screen_class: type[Screen[None]]) -> None:
        super().__init__()
        self.screen_class = screen_class
        self.layouts = 0

    def get_default_screen(self) -> Screen[None]:
        screen = self.screen_class(id="_default")
        refresh_layout = screen._refresh_layout

        def counted(*args: Any, **kwargs: Any) -> None:
            self.layouts += 1
            refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        return screen

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static("first", id="above")
            yield Static(LINE, id="text")


async def settled(pilot: Pilot[None]) -> None:
    """Every request the last change set off has been laid out and painted."""
    for _ in range(4):
        await pilot.app.screen.wait_for_refresh()
        await pilot.pause()


async def layouts_for_growth(screen_class: type[Screen[None]], lines: int) -> int:
    app = Host(screen_class)
    async with app.run_test(size=(60, 10)) as pilot:
        app.query_one(VerticalScroll).anchor()
        await settled(pilot)
        before = app.layouts
        app.query_one("#text", Static).update("\n".join([LINE] * lines))
        await settled(pilot)
        return app.layouts - before


async def test_a_text_that_grows_is_laid_out_once() -> None:
    # Textual's own screen lays it out a second time for the sizes the first layout set.
    assert await layouts_for_growth(Screen, 3) == 2
    assert await layouts_for_growth(OnePassScreen, 3) == 1


async def test_a_scrollbar_that_comes_still_rewraps_the_text_beside_it() -> None:
    """The growth that overflows the view brings its scrollbar: the view's content is
    narrower, so the text is laid out again at that width (the one request kept)."""
    app = Host(OnePassScreen)
    async with app.run_test(size=(60, 10)) as pilot:
        view = app.query_one(VerticalScroll)
        text = app.query_one("#text", Static)
        await settled(pilot)
        assert not view.show_vertical_scrollbar and text.size.width == 60
        text.update(" ".join([LINE] * 30))
        await settled(pilot)
        assert view.show_vertical_scrollbar
        assert text.size.width == view.scrollable_content_region.width < 60
        assert text.size.height == text.get_content_height(view.size, view.size, text.size.width)


class Painted:
    """The screen as the paints sent it (the terminal's cells): each update the screen's
    compositor renders is applied, whole or in the spans it names."""

    def __init__(self, screen: Screen[Any]) -> None:
        self.compositor = screen._compositor
        width, height = screen.size
        self.cells = [[" "] * width for _ in range(height)]
        render_update = self.compositor.render_update

        def applied(*args: Any, **kwargs: Any) -> Any:
            update = render_update(*args, **kwargs)
            self.apply(update)
            return update

        self.compositor.render_update = applied  # type: ignore[method-assign]

    def apply(self, update: object) -> None:
        if isinstance(update, LayoutUpdate):
            for y, line in enumerate(update.strips):
                self.write(y, 0, Strip.join(line).text, 0, len(self.cells[y]))
        elif isinstance(update, ChopsUpdate):
            for y, start, end in update.spans:
                for x, strip in update.chops[y].items():
                    if strip is not None:
                        self.write(y, x, strip.text, start, end)

    def write(self, y: int, x: int, text: str, start: int, end: int) -> None:
        row = self.cells[y]
        for offset, char in enumerate(text):
            if start <= x + offset < min(end, len(row)):
                row[x + offset] = char

    def text(self) -> list[str]:
        return ["".join(row) for row in self.cells]

    def fresh(self) -> list[str]:
        """The screen painted whole from the current layout."""
        return [Strip.join(line).text for line in self.compositor.render_full_update().strips]


async def test_a_streamed_reply_on_screen_is_what_a_fresh_paint_shows(make_app: MakeApp) -> None:
    """The cells painted while a long Markdown reply streamed in frames (each frame's second
    layout and paint skipped) are the cells of the screen painted from scratch."""
    app = make_app(factory=fake_factory(script=streamed))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        painted = Painted(app.screen)
        app.screen.refresh()  # every cell painted once: the buffer starts as the screen is
        await settled(pilot)
        await submit(pilot, app, "write a lot")
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=120)
        await settled(pilot)
        assert app.query_one(AssistantMessage).body.source == REPLY
        assert painted.text() == painted.fresh()


async def test_a_growing_text_on_screen_is_what_a_fresh_paint_shows() -> None:
    app = Host(OnePassScreen)
    async with app.run_test(size=(60, 10)) as pilot:
        app.query_one(VerticalScroll).anchor()
        await settled(pilot)
        painted = Painted(app.screen)
        app.screen.refresh()  # every cell painted once: the buffer starts as the screen is
        text = app.query_one("#text", Static)
        for lines in range(1, 30, 4):
            text.update("\n".join(f"{LINE} {n}" for n in range(lines)))
            await settled(pilot)
            assert painted.text() == painted.fresh()


async def test_a_change_the_layout_did_not_see_is_still_painted() -> None:
    """A widget changed in place (same size) just before a layout, its request not yet at the
    screen: the layout leaves its cells alone, so its own request must still paint them."""
    app = Host(OnePassScreen)
    async with app.run_test(size=(60, 10)) as pilot:
        await settled(pilot)
        painted = Painted(app.screen)
        app.screen.refresh()
        await settled(pilot)
        app.query_one("#above", Static).update("FIRST")
        app.query_one("#text", Static).update(f"{LINE}\n{LINE}")  # this one moves and grows
        app.screen._refresh_layout()  # before either widget's request reached the screen
        await settled(pilot)
        assert "FIRST" in painted.text()[0]
        assert painted.text() == painted.fresh()
