"""The chat's paints keep the very pieces Textual's own compositor keeps.

:class:`FrontFirstCompositor` renders and cuts only the rows of a widget that the widgets in
front of it leave uncovered. Every paint of the real app below is made twice, by it and by
Textual's stock compositor on the same screen, and the two must agree cell for cell and style
for style: while a reply streams under an earlier one, with a notice in front of the chat,
after a scroll that cuts the reply at the top of the view, in a narrower window, and behind
the command palette.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static
from textual.widgets._toast import Toast

from agentsh.tui.front_first import FrontFirstCompositor
from agentsh.tui.one_pass_layout import OnePassScreen
from agentsh.tui.widgets.chat import ChatView
from tests.tui.conftest import MakeApp, fake_factory, idle, ready, submit, wait_for
from tests.tui.fake_agent import streaming
from tests.tui.test_stream_render_loop import markdown_reply

pytestmark = pytest.mark.asyncio

REPLY = markdown_reply(15)
Cells = list[list[tuple[int, object]]]


def cells(chops: Sequence[Mapping[int, Strip | None]]) -> Cells:
    """Each row's pieces: where each starts, and its segments (text, style, control)."""
    return [
        [(cut, None if strip is None else list(strip)) for cut, strip in row.items()]
        for row in chops
    ]


async def test_every_paint_keeps_the_pieces_textuals_compositor_keeps(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    differences: list[tuple[Region, Cells, Cells]] = []
    paints = {"all": 0, "with a notice": 0}
    front_first = FrontFirstCompositor._render_chops

    def both(
        self: FrontFirstCompositor, crop: Region, is_rendered_line: Callable[[int], bool]
    ) -> Sequence[Mapping[int, Strip]]:
        chops = front_first(self, crop, is_rendered_line)
        ours = cells(chops)
        stock = cells(Compositor._render_chops(self, crop, is_rendered_line))
        paints["all"] += 1
        paints["with a notice"] += any(isinstance(w, Toast) for w in self.visible_widgets)
        if ours != stock:
            differences.append((crop, ours, stock))
        return chops

    monkeypatch.setattr(FrontFirstCompositor, "_render_chops", both)
    app = make_app(factory=fake_factory(script=streaming(REPLY, pause_s=0.005)))
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        assert isinstance(app.screen._compositor, FrontFirstCompositor)
        await ready(pilot, app)
        await submit(pilot, app, "an earlier question")
        await idle(pilot, app)
        await submit(pilot, app, "and another")
        await wait_for(pilot, lambda: len(app.controller.chat.query("*")) > 30)
        app.notify("a notice in front of the chat while the reply streams", timeout=30)
        await idle(pilot, app)
        chat = app.query_one(ChatView)
        chat.scroll_to(y=chat.max_scroll_y // 2 + 3, animate=False, immediate=True)
        await pilot.pause()
        await pilot.resize_terminal(61, 24)
        await pilot.pause(0.1)
        behind = paints["all"]
        await pilot.press("ctrl+p")  # the chat drawn behind the palette, tinted
        await wait_for(pilot, lambda: paints["all"] > behind)
        await pilot.press("escape")
    assert paints["all"] > 20 and paints["with a notice"] > 3, paints
    assert not differences, f"{len(differences)} of {paints['all']} paints differ"


def every_row(_y: int) -> bool:
    return True


class Short(Static):
    """A widget that draws fewer rows than it has (Textual leaves the rest blank)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        return super().render_lines(crop)[:1]


class ShortHost(App[None]):
    def get_default_screen(self) -> Screen[None]:
        return OnePassScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Short("one\ntwo\nthree")


async def test_a_widget_drawing_fewer_rows_than_it_has_is_painted_as_textual_paints_it() -> None:
    app = ShortHost()
    async with app.run_test(size=(20, 5)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        assert isinstance(compositor, FrontFirstCompositor)
        everything = compositor.size.region
        ours = compositor._render_chops(everything, every_row)
        assert cells(ours) == cells(Compositor._render_chops(compositor, everything, every_row))
