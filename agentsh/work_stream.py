"""A piece of the agent's work (a turn, a compaction) as one stream of events.

The work runs in a task and emits events into a queue from anywhere (a tool's output, an
approval request, compaction progress); the stream drains the queue for the front end until
the task ends, then re-raises what the task raised. Closing the stream early cancels the task.
One piece runs at a time: the agent asks :attr:`WorkStream.busy` before it starts one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable

from agentsh.events import Event
from agentsh.turn import LoopShare

_DONE = object()


def _dropped(_event: Event) -> None:
    """Where events go while no work runs."""


class WorkStream:
    """The running task of one agent, and where its events go."""

    def __init__(self) -> None:
        self._emit: Callable[[Event], None] = _dropped
        self._task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def emit(self, event: Event) -> None:
        """Into the stream of the running work (dropped when none runs)."""
        self._emit(event)

    def cancel(self) -> None:
        """Cancel the running task (its stream then ends with what it had emitted)."""
        if self._task is not None:
            self._task.cancel()

    async def drive(self, work: Awaitable[None]) -> AsyncGenerator[Event, None]:
        """Run ``work`` in a task, yielding what it emits until it ends."""
        queue: asyncio.Queue[object] = asyncio.Queue()
        self._emit = queue.put_nowait
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._task = task
        task.add_done_callback(lambda _t: queue.put_nowait(_DONE))
        share = LoopShare()  # a front end handling a backlog of events leaves room for keys
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                assert isinstance(item, Event)
                yield item
                await share.step()
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            self._emit = _dropped
