"""A key's echo is painted before a layout the chat asked for, and only when the layout cannot
move the editor: the order of the screen's paints and layouts, and the cells they leave.

No times: a key and a chat's growth are made to wait for the same screen update (the app
holds its updates in a batch while both requests reach the screen), then what that update
painted first, and what the screen shows once all is done, are compared.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual._compositor import ChopsUpdate
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static, TextArea

from agentsh.tui.echo_first import EchoFirstScreen
from agentsh.tui.widgets import typing_clock
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import AssistantMessage
from tests.tui.conftest import MakeApp, fake_factory, ready, submit, wait_for
from tests.tui.test_one_pass_layout import Painted, settled
from tests.tui.test_stream_render_loop import REPLY, streamed

pytestmark = pytest.mark.asyncio


@pytest.fixture(autouse=True)
def no_key_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key was typed into the editor yet (the clock is the process's)."""
    monkeypatch.setattr(typing_clock, "_last_key", float("-inf"))


def paints_and_layouts(updates: list[tuple[str, set[int]]]) -> list[tuple[str, set[int]]]:
    return [(kind, rows) for kind, rows in updates if kind in ("paint", "layout")]


class Host(App[None]):
    """A fixed-size chat above an editor, as in the app; the screen's updates are logged."""

    CSS = """
    #column { height: 1fr; }
    #chat { height: 1fr; }
    #reply { height: auto; }
    #composer { height: auto; }
    #editor { height: 3; }
    #status { dock: bottom; height: auto; }
    """

    def __init__(self) -> None:
        super().__init__()
        # ("paint", rows painted), ("layout", ...), ("tick", ...): an update of the screen's
        # timer, ("echo", ...) or ("no echo", ...): the focused widget painted alone, or not
        self.updates: list[tuple[str, set[int]]] = []

    def get_default_screen(self) -> Screen[None]:
        screen = EchoFirstScreen(id="_default")
        refresh_layout = screen._refresh_layout
        render_update = screen._compositor.render_update
        timer_update = screen._on_timer_update
        paint_echo = screen._paint_echo

        def layout(*args: Any, **kwargs: Any) -> None:
            self.updates.append(("layout", set()))
            refresh_layout(*args, **kwargs)

        def paint(*args: Any, **kwargs: Any) -> Any:
            update = render_update(*args, **kwargs)
            rows = {y for y, _, _ in update.spans} if isinstance(update, ChopsUpdate) else {-1}
            self.updates.append(("paint", rows))
            return update

        def tick() -> None:
            self.updates.append(("tick", set()))
            timer_update()

        def echo() -> bool:
            at = len(self.updates)  # logged before the paint it makes
            self.updates.append(("echo", set()))
            painted = paint_echo()
            self.updates[at] = ("echo" if painted else "no echo", set())
            return painted

        # (the update timer, made when the screen mounts, calls the one set here)
        screen._refresh_layout = layout  # type: ignore[method-assign]
        screen._compositor.render_update = paint  # type: ignore[method-assign]
        screen._on_timer_update = tick  # type: ignore[method-assign]
        screen._paint_echo = echo  # type: ignore[method-assign]
        return screen

    def compose(self) -> ComposeResult:
        with Vertical(id="column"):
            with VerticalScroll(id="chat"), Vertical(id="reply"):
                yield Static("an earlier block")
            with Vertical(id="composer"):
                yield TextArea(id="editor")
        yield Status(id="status")


class Status(Widget):
    """A line that repaints in place: a new text, the same size."""

    text = "status: streaming"

    def render(self) -> str:
        return self.text


async def focused_editor(pilot: Pilot[None]) -> tuple[Host, TextArea]:
    """The host with its editor focused, all settled, and no update logged yet."""
    app = pilot.app
    assert isinstance(app, Host)
    editor = app.query_one("#editor", TextArea)
    editor.focus()
    await settled(pilot)
    app.updates.clear()
    return app, editor


async def one_update(pilot: Pilot[None], change: Any) -> list[tuple[str, set[int]]]:
    """Type "z" into the focused editor and make ``change``; both reach the screen before
    either is painted. The screen's paints and layouts until all is settled."""
    app, editor = await focused_editor(pilot)
    with app.batch_update():
        editor.insert("z")
        await change(app)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, EchoFirstScreen)
        assert editor in screen._dirty_widgets and screen._layout_required
    await settled(pilot)
    return list(app.updates)


def editor_rows(app: App[None]) -> set[int]:
    region = app.query_one("#editor").region
    return set(range(region.y, region.bottom))


async def grow_chat(app: App[None]) -> None:
    """A streamed frame: a block mounted in the reply, inside the fixed-size chat."""
    await app.query_one("#reply").mount(Static("a new block of the reply"))


async def test_a_key_is_painted_before_the_layout_the_chat_asked_for() -> None:
    app = Host()
    async with app.run_test(size=(60, 16)) as pilot:
        painted = Painted(app.screen)
        app.screen.refresh()  # every cell painted once: the buffer starts as the screen is
        updates = paints_and_layouts(await one_update(pilot, grow_chat))
        kind, rows = updates[0]
        assert kind == "paint" and rows and rows <= editor_rows(app)  # the editor, alone
        assert updates[1][0] == "layout"
        assert any(line.lstrip("▊▎ ").startswith("z") for line in painted.text())
        assert "a new block" in "\n".join(painted.text())
        assert painted.text() == painted.fresh()


async def test_what_else_waited_for_a_paint_is_painted_with_the_layout() -> None:
    """A line changed in place in the same update (it neither moves nor resizes, so the
    layout does not repaint it) is still painted, after the key."""

    async def status_and_chat(app: App[None]) -> None:
        status = app.query_one(Status)
        status.text = "status: done"
        status.refresh()
        await grow_chat(app)

    app = Host()
    async with app.run_test(size=(60, 16)) as pilot:
        painted = Painted(app.screen)
        app.screen.refresh()
        updates = paints_and_layouts(await one_update(pilot, status_and_chat))
        assert updates[0][0] == "paint" and updates[0][1] <= editor_rows(app)
        assert painted.text()[-1].startswith("status: done")
        assert painted.text() == painted.fresh()


async def mount_beside_editor(app: App[None]) -> None:
    await app.query_one("#composer").mount(Static("a notice above the editor"), before=0)


async def editor_grows(app: App[None]) -> None:
    app.query_one("#editor").styles.height = 5
    await grow_chat(app)


async def mount_in_chat(app: App[None]) -> None:
    """The chat itself asks: its own size may be what changed, and the column holds both."""
    await app.query_one("#chat").mount(Static("a reply"))


async def status_grows(app: App[None]) -> None:
    """A line docked on the screen, outside the editor's containers, grows: the column that
    holds the editor shrinks."""
    app.query_one(Status).styles.height = 3
    await grow_chat(app)


async def screen_layout(app: App[None]) -> None:
    app.screen.refresh(layout=True)
    await grow_chat(app)


@pytest.mark.parametrize(
    "change", [mount_beside_editor, editor_grows, mount_in_chat, status_grows, screen_layout]
)
async def test_a_layout_that_may_move_the_editor_comes_first(change: Any) -> None:
    """A request from the editor's container, the editor, the chat beside it, a line docked
    on the screen, or the screen's own: the editor may move, so Textual lays out first."""
    app = Host()
    async with app.run_test(size=(60, 16)) as pilot:
        painted = Painted(app.screen)
        app.screen.refresh()
        updates = paints_and_layouts(await one_update(pilot, change))
        assert updates[0][0] == "layout"
        assert painted.text() == painted.fresh()


async def typed_alone(pilot: Pilot[None], typed: bool) -> list[tuple[str, set[int]]]:
    """Insert "z" into the focused editor, nothing else pending; ``typed``: as a key typed."""
    app, editor = await focused_editor(pilot)
    if typed:
        typing_clock.key_typed()
    editor.insert("z")
    await settled(pilot)
    return list(app.updates)


async def test_a_key_is_painted_when_its_request_arrives_not_at_the_next_update() -> None:
    app = Host()
    async with app.run_test(size=(60, 16)) as pilot:
        updates = await typed_alone(pilot, typed=True)
        assert [kind for kind, _ in updates[:2]] == ["echo", "paint"]
        assert updates[1][1] <= editor_rows(app)


async def test_a_change_that_no_key_made_waits_for_the_next_update() -> None:
    """The editor changed, but no key was typed (the App set its text, say): painted at the
    screen's next update, with whatever else changed, as Textual always does."""
    app = Host()
    async with app.run_test(size=(60, 16)) as pilot:
        updates = await typed_alone(pilot, typed=False)
        assert [kind for kind, _ in updates[:2]] == ["tick", "paint"]


async def test_keys_typed_while_a_reply_streams_leave_the_screen_a_fresh_paint_shows(
    make_app: MakeApp,
) -> None:
    """In the real app: keys pressed while a long Markdown reply streams are all in the editor,
    some were painted ahead of the chat's layout, and the cells on screen are the cells of the
    screen painted from scratch."""
    app = make_app(factory=fake_factory(script=streamed))
    echoes = 0
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        screen = app.screen
        assert isinstance(screen, EchoFirstScreen)
        paint_echo = screen._paint_echo

        def counted() -> bool:
            nonlocal echoes
            painted = paint_echo()
            echoes += painted
            return painted

        screen._paint_echo = counted  # type: ignore[method-assign]
        painted = Painted(screen)
        screen.refresh()
        await settled(pilot)
        await submit(pilot, app, "write a lot")
        typed = ""
        while app.controller.turn_running and len(typed) < 200:
            typed += "zqxj"[len(typed) % 4]
            await pilot.press(typed[-1])
        await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=120)
        await settled(pilot)
        assert app.query_one(AssistantMessage).body.source == REPLY
        assert app.query_one(PromptInput).text == typed
        assert echoes > 0
        assert painted.text() == painted.fresh()
