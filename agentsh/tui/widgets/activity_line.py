"""The working indicator: one line above the editor while a turn or a compaction runs.

It reads ``⠙ running bash: pytest -q · 12s · Esc to cancel`` (:class:`agentsh.tui.activity.
Activity` holds the state; the running turn feeds it every event). It is cheap by design: one
interval timer, paused while idle, redraws this one line and nothing else (the line keeps its
size, so the chat above is not laid out again); it shows when work starts and hides the moment
the work ends. Where a side pane has taken the narrow chat column's place (and this line with
it), each tick hands a compact ``⠙ working · 12s · Esc to cancel`` to :attr:`ActivityLine.mirror`
(the status bar), so the running turn never looks idle.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from agentsh.events import Event
from agentsh.tui.activity import SPINNER, WAITING, Activity, human_seconds

TICK_S = 1 / 8  # the spinner's frame; the elapsed seconds follow from it


class ActivityLine(Widget):
    def __init__(self, *, cancel_key: str = "Esc", id: str | None = "activity") -> None:
        super().__init__(id=id)
        self.activity = Activity()
        self.cancel_key = cancel_key
        self._timer: Timer | None = None
        self.cancelling = False  # Esc was pressed; the work has not stopped yet
        self.display = False
        # Shown elsewhere while a container above hides this line ("" once it shows again).
        self.mirror: Callable[[str], None] | None = None
        self._mirrored = ""

    def on_mount(self) -> None:
        self._timer = self.set_interval(TICK_S, self._tick, pause=True)

    def _tick(self) -> None:
        self.refresh()
        self._mirror()

    def _mirror(self) -> None:
        hidden = any(not node.display for node in self.ancestors if isinstance(node, Widget))
        text = self.activity.compact(self.cancel_key) if hidden else ""
        if text != self._mirrored and self.mirror is not None:
            self._mirrored = text
            self.mirror(text)

    @property
    def running(self) -> bool:
        return self.activity.running

    def begin(self, doing: str = WAITING) -> None:
        """Work started (before its first event arrives: a slow model sends none for a while)."""
        self.activity.start(doing)
        self.cancelling = False
        self._shown(True)

    def cancel_asked(self) -> None:
        """Esc was pressed: the line says "cancelling…" until the work has stopped (a model
        client still starting, a command being ended, take a moment)."""
        if self.activity.running:
            self.cancelling = True
            self.refresh()

    def follow(self, event: Event) -> None:
        """Follow the turn's event; the line is drawn again only when what it says changed
        (a streamed reply sends hundreds of deltas a second, each one "writing": the timer's
        next tick draws the spinner and the seconds anyway)."""
        activity = self.activity
        was_running, was_doing = activity.running, activity.doing
        activity.follow(event)
        if activity.running != was_running:
            self._shown(activity.running)
        elif activity.running and activity.doing != was_doing:
            self.refresh()

    def end(self) -> None:
        """The work ended (also when its stream broke off without a TurnEnded)."""
        self.activity.stop()
        self.cancelling = False
        self._shown(False)

    def _shown(self, shown: bool) -> None:
        self.display = shown
        if self._timer is not None:
            if shown:
                self._timer.resume()
            else:
                self._timer.pause()
        self.refresh()
        self._mirror()

    def render(self) -> Content:
        if self.cancelling and self.activity.running:
            elapsed = self.activity.elapsed()
            frame = SPINNER[int(elapsed * 8) % len(SPINNER)]
            return Content(f"{frame} cancelling… · {human_seconds(elapsed)}")
        return Content(self.activity.line(self.cancel_key))
