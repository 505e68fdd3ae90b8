"""Containers that skip work Textual would redo draw and place exactly what Textual would.

:class:`AlikeRows` draws one row between a container's edges and repeats it: every row it
returns is compared, segment by segment, with the rows Textual's own ``render_lines`` draws,
for borders, padding, tints and crops that cut the edges. :class:`MeasuredArrangement` places
children with the arrangement that measured the container: its placements are compared with
Textual's at the container's real size, it steps aside when a child's height depends on the
container's, a block that grows no longer re-measures its siblings, and the children are looked
at again only when they changed (counted, not timed).
The streamed reply in the real app is checked cell by cell in ``test_one_pass_layout``.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from agentsh.tui.widgets.steady_containers import AlikeRows, MeasuredArrangement

pytestmark = pytest.mark.asyncio


class Box(AlikeRows, Vertical):
    """A container of text, drawn the steady way."""


class Column(MeasuredArrangement, Vertical):
    """A column of blocks, placed the steady way."""


class Auto(Vertical):
    """A column of blocks, placed Textual's way."""


COLUMNS = "Column, Auto { height: auto; }"


STYLES = [
    "",
    "padding: 0 1; background: $surface;",
    "padding: 2 1 1 3; background: $panel;",
    "border-left: outer $primary; padding: 0 1;",
    "border: round $accent; padding: 1 2;",
    "border: heavy red; border-title-align: center;",
    "outline: solid green; padding: 1;",  # drawn by Textual: see AlikeRows._rows_alike
    "background: $accent 30%; background-tint: $foreground 5%; opacity: 0.7;",
    "border-bottom: tall $warning; hatch: cross $accent;",
]


class Boxes(App[None]):
    CSS = "Box { height: 14; margin: 1 0; } Static { margin: 1 0; }\n" + "\n".join(
        f".style-{index} {{ {css} }}" for index, css in enumerate(STYLES)
    )

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            for index in range(len(STYLES)):
                box = Box(Static(f"box {index} says hello"), Static("and so on"))
                box.add_class(f"style-{index}")
                if index == 5:
                    box.border_title = "title"
                yield box


def rows(strips: list[Strip]) -> list[list[tuple[str, object]]]:
    return [[(segment.text, segment.style) for segment in strip] for strip in strips]


async def test_alike_rows_draw_what_textual_draws() -> None:
    app = Boxes()
    async with app.run_test(size=(50, 60)) as pilot:
        await pilot.pause()
        crops_checked = 0
        for box in app.query(Box):
            width, height = box.region.size
            crops = [
                Region(0, 0, width, height),
                Region(0, 1, width, height - 2),
                Region(0, 3, width, 4),
                Region(2, 0, width - 4, 2),
                Region(1, height - 3, width - 1, 3),
            ]
            for crop in crops:
                box._styles_cache.clear()
                steady = box.render_lines(crop)
                box._styles_cache.clear()
                textual = Widget.render_lines(box, crop)
                assert rows(steady) == rows(textual), (box.classes, crop)
                crops_checked += 1
        assert crops_checked == len(STYLES) * 5


class Blocks(App[None]):
    CSS = COLUMNS

    def __init__(self, column: Widget) -> None:
        super().__init__()
        self.column = column

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield self.column


class Drawn(AlikeRows, Vertical):
    def render(self) -> str:
        return "its own content"


async def test_a_container_that_draws_itself_is_drawn_by_textual() -> None:
    app = Blocks(Vertical(Box(Static("plain")), Drawn(Static("drawn"))))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        assert app.query_one(Box)._rows_alike() is True
        assert app.query_one(Drawn)._rows_alike() is False


def column_of(cls: type[Vertical], *extra: Widget) -> Vertical:
    blocks = [Static("\n".join(["block"] * (1 + n % 3)), classes="block") for n in range(40)]
    for block in blocks[::4]:
        block.styles.margin = (1, 0, 1, 0)
    return cls(*blocks, *extra)


def placed(column: Vertical, *, steady: bool) -> list[tuple[Widget, Region, object]]:
    """Where the column places its children at its real size: its own way or Textual's."""
    size = column.content_region.size
    assert size.height > 40  # the real size, not the measuring one
    arranged = column.arrange(size) if steady else Widget.arrange(column, size)
    return [(p.widget, p.region, p.margin) for p in arranged.placements]


async def test_measured_placements_are_textuals() -> None:
    app = Blocks(column_of(Column, Static("fixed", id="fixed")))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        column = app.query_one(Column)
        column.query_one("#fixed").styles.height = 3
        await pilot.pause()
        assert column._measured_is_placed()
        assert placed(column, steady=True) == placed(column, steady=False)


@pytest.mark.parametrize(
    "css", ["height: 1fr;", "height: 50%;", "min-height: 10%;", "dock: bottom;", "height: 2h;"]
)
async def test_a_child_sized_by_the_container_is_placed_by_textual(css: str) -> None:
    app = Blocks(column_of(Column, Static("odd one", id="odd")))
    async with app.run_test(size=(60, 20)) as pilot:
        column = app.query_one(Column)
        assert column._measured_is_placed()
        column.query_one("#odd").set_styles(css)
        await pilot.pause()
        assert not column._measured_is_placed()
        assert placed(column, steady=True) == placed(column, steady=False)


async def remeasured_when_the_last_block_grows(
    cls: type[Vertical], monkeypatch: pytest.MonkeyPatch
) -> int:
    """How many box models are worked out (not taken from a cache) when one block grows."""
    app = Blocks(column_of(cls))
    async with app.run_test(size=(60, 20)) as pilot:
        app.query_one(VerticalScroll).anchor()
        await pilot.pause()
        worked_out = 0
        resolve = Widget._resolve_extrema  # called only when a box model is not cached

        def counted(self: Widget, *args: object, **kwargs: object) -> object:
            nonlocal worked_out
            worked_out += isinstance(self, Static)
            return resolve(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "_resolve_extrema", counted)
        blocks = app.query(".block")
        blocks.last().update("\n".join(["grown"] * 5))  # type: ignore[attr-defined]
        await pilot.pause()
        await app.screen.wait_for_refresh()
        monkeypatch.undo()
        return worked_out


async def test_a_growing_block_does_not_remeasure_its_siblings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert await remeasured_when_the_last_block_grows(Auto, monkeypatch) >= 40
    assert await remeasured_when_the_last_block_grows(Column, monkeypatch) <= 3


async def test_the_children_are_looked_at_again_only_when_they_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = Blocks(column_of(Column))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        column = app.query_one(Column)
        looks = 0
        look = Column._measured_is_placed

        def counted(self: Column) -> bool:
            nonlocal looks
            looks += 1
            return look(self)

        monkeypatch.setattr(Column, "_measured_is_placed", counted)
        size = column.content_region.size
        for _ in range(10):
            column.arrange(size)
        assert looks <= 1
        looks = 0
        column.query(".block").last().update("grown\ngrown")  # type: ignore[attr-defined]
        await pilot.pause()
        assert looks >= 1  # laid out again: a new arrangement, looked at
        looks = 0
        for _ in range(10):
            column.arrange(column.content_region.size)
        assert looks == 0
