"""Sending: a message runs as a turn or waits in the queue; Esc cancels; approvals answer.

One turn (or ``/compact``) at a time: its events are consumed by a worker into a
:class:`~agentsh.tui.turn_view.TurnView`, which projects the entries the turn writes into the
chat. Messages typed meanwhile are queued (shown under the chat) and sent in order; Esc
cancels the turn and puts the queued messages back in the editor, unsent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from agentsh.tui.activity import WAITING
from agentsh.tui.projection import ApprovalItem, Projector, projector_for
from agentsh.tui.turn_view import TurnView
from agentsh.tui.widgets.messages import QueuedMessage

if TYPE_CHECKING:
    from textual.app import App

    from agentsh.events import ApprovalDecision, Event
    from agentsh.tui.current import Current
    from agentsh.tui.display import View
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt


class TurnRunner:
    def __init__(
        self,
        app: App[None],
        current: Current,
        view: View,
        *,
        after_turn: Callable[[], Awaitable[None]],
    ) -> None:
        self.app = app
        self.current = current
        self.view = view
        self.after_turn = after_turn  # the chat's fork markers, the panes, the file list
        self.queue: deque[str] = deque()
        self._queued_widgets: list[QueuedMessage] = []
        self._turn_done: asyncio.Event | None = None  # set when the running turn has ended

    async def send(self, text: str) -> None:
        """Run ``text`` as a turn now, or queue it behind the running work."""
        current = self.current
        if current.turn_running or current.agent is None:
            await self._enqueue(text)
            return
        self._start_turn(text)

    async def _enqueue(self, text: str) -> None:
        self.queue.append(text)
        widget = QueuedMessage(text)
        self._queued_widgets.append(widget)
        await self.app.query_one("#queue").mount(widget)

    def resume_queue(self) -> None:
        """Send the next queued message, if any (after work that held the queue ended)."""
        if self.queue and not self.current.turn_running and self.current.agent is not None:
            self._start_next()

    def _start_next(self) -> None:
        if not self.queue:
            return
        text = self.queue.popleft()
        if self._queued_widgets:
            self._queued_widgets.pop(0).remove()
        # Sent a while ago: a user who scrolled up to read since is not moved (the working
        # indicator shows it runs).
        self._start_turn(text, reveal=self.view.chat.following)

    def _start_turn(self, text: str, *, reveal: bool = True) -> None:
        agent = self.current.agent
        assert agent is not None
        self.run_events(agent.run(text), user_text=text, reveal=reveal)

    def run_events(
        self,
        events: AsyncIterator[Event],
        *,
        user_text: str = "",
        reveal: bool = True,
        doing: str = WAITING,
    ) -> None:
        """Show a stream of agent events (a turn, a compaction) in the chat, in a worker
        (``reveal``: the chat goes to its end first; ``doing``: the working line's first
        words, until the first event says more)."""
        self.current.turn_running = True
        self._turn_done = asyncio.Event()
        self.view.activity.begin(doing)  # the clock runs from the key press, not the first token
        self.app.run_worker(
            self._consume(events, user_text, reveal), name="turn", group="turn", exit_on_error=False
        )

    async def _consume(self, events: AsyncIterator[Event], user_text: str, reveal: bool) -> None:
        view = self.view
        session = self.current.current_session()
        # What the chat shows now, continued entry by entry as the turn writes them.
        projector = projector_for(session) if session is not None else Projector()
        turn = TurnView(view, user_text, projector, self.current.path_changed)
        if reveal:
            await view.chat.reveal_end()
        try:
            activity = view.activity  # a query of the screen: once, not at every delta
            async for event in events:
                activity.follow(event)
                await turn.handle(event)
        except Exception as exc:  # noqa: BLE001 - a crashed turn is shown, the app goes on
            await view.note(f"The turn failed: {exc}", "error")
        finally:
            view.activity.end()
            await turn.close()
            self.current.turn_running = False
            focused = self.app.focused
            if focused is None or not focused.focusable:
                # An approval prompt withdrawn by Esc keeps the focus it can no longer take:
                # typing would go nowhere. The editor takes it back.
                view.prompt.focus()
            if self._turn_done is not None:
                self._turn_done.set()
            await self.after_turn()
            self.current.path_changed.publish("turn")
            if self.queue:
                self._start_next()

    def cancel(self) -> bool:
        """Esc: stop the running turn. Queued messages go back to the editor, unsent (also
        those waiting for the agent to load: nothing runs yet)."""
        agent = self.current.agent
        if self.current.turn_running and agent is not None:
            agent.cancel()
            self.view.activity.cancel_asked()
        elif not self.queue:
            return False
        if self.queue:
            queued = "\n\n".join(self.queue)
            self.queue.clear()
            for widget in self._queued_widgets:
                widget.remove()
            self._queued_widgets.clear()
            prompt = self.view.prompt
            prompt.put_text(f"{queued}\n\n{prompt.text}".rstrip() if prompt.text else queued)
        return True

    async def stop_for_exit(self) -> None:
        """A running turn is cancelled and given 2 s to log its partial reply as aborted,
        while the session file is still open."""
        if self.current.turn_running and self.current.agent is not None:
            done = self._turn_done
            self.cancel()
            if done is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 2.0)

    def approval_decided(self, prompt: ApprovalPrompt, decision: ApprovalDecision) -> None:
        """Remember the answer as the row's data (a remount shows it) and give focus back."""
        chat = self.view.chat
        shown = chat.item_of(prompt)
        logged = isinstance(shown, ApprovalItem) and shown.entry_id
        if prompt.answered is not None and not logged:  # a denial is logged at once, and its
            # line may have come before this message
            chat.set_item(prompt, prompt.answered)
        self.view.prompt.focus()
