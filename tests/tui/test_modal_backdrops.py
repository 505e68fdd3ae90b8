"""Modal screens leave the app behind them in view, in every kind of theme.

Textual's ModalScreen dims what is under it with a translucent background, and switches to a
transparent one in ANSI themes (``ansi-dark``, ``ansi-light``), where colours cannot be blended.
A rule of ours that sets a modal's background must keep that ANSI exception, or the screen
underneath is painted over: the picker of ``/theme`` blanked the whole transcript the moment
the preview reached an ANSI theme.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.screen import Screen

from agentsh.tui.screens.help import HelpScreen
from agentsh.tui.screens.leave_branch import LeaveBranchScreen
from agentsh.tui.screens.picker import PickerItem, PickerScreen
from agentsh.tui.screens.read_view import ReadView
from agentsh.tui.screens.session_picker import SessionPicker
from agentsh.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import MakeApp, wait_for

MODALS: dict[str, Callable[[], Screen[Any]]] = {
    "picker": lambda: PickerScreen("Theme", [PickerItem("a", "a")]),
    "sessions": lambda: SessionPicker([PickerItem("a", "a")]),
    "help": lambda: HelpScreen({}),
    "read view": lambda: ReadView("A note", "some text"),
    "leave branch": lambda: LeaveBranchScreen("2 messages"),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("theme", ["agentsh-dark", "ansi-dark", "ansi-light"])
async def test_every_modal_screen_leaves_the_status_bar_behind_it_in_view(
    make_app: MakeApp, theme: str
) -> None:
    app = make_app()
    # Wide and tall enough that even the read view (at most 110x40) leaves the bottom row free.
    async with app.run_test(size=(160, 50)) as pilot:
        app.theme = theme
        await wait_for(pilot, lambda: "test/fake" in str(app.query_one(StatusBar).render()))
        hidden = []
        for name, make_modal in MODALS.items():
            modal = make_modal()
            app.push_screen(modal)
            await wait_for(pilot, lambda: app.screen is modal)  # noqa: B023 - awaited right here
            await pilot.pause(0.05)
            if "test/fake" not in app.export_screenshot():
                hidden.append(name)
            app.pop_screen()
        assert hidden == []
