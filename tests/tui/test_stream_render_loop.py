"""Painting a streamed Markdown reply never holds the UI loop for more than 50 ms of its CPU.

``test_ui_loop_responsive`` pins the model I/O and the agent's events on their way to the chat
(plain words, painted cheaply). This pins the other half: the chat painting a reply of
headings, paragraphs, lists and code blocks as it streams at about 1,000 tokens a second, below
an earlier reply, in the real app. It is measured with the same probe (a 10 ms Textual timer,
the UI thread's own CPU clock between two of its ticks, garbage collection not counted), so a
loaded machine, which makes ticks late without the UI thread working, fails nothing; a frame
that lays out and draws the chat in one stretch longer than 50 ms of CPU does, whatever the
load: a key pressed then would have waited at least as long.

Textual lays out and draws the chat in one stretch at each streamed frame, so that stretch is
what is held to 50 ms. On the shared 2-core machine, on a day its CPU ran about twice as slow as
when this test was written, 3-5 of 362-367 ticks came after more than 50 ms of CPU (worst 62-80
ms), against 18-23 of 309-319 (worst 91-154 ms) while each list item was a row of three
widgets, and a growing list was mounted anew at each frame (see
:mod:`agentsh.tui.widgets.markdown_lists`). Since each paint draws each cell once (see
:mod:`agentsh.tui.front_first`), 0-4 ticks a run of 250-429 (6 in 12 runs), against 0-5 of
250-411 (24 in 12 runs) in the same session. Those runs waited for the reply with Pilot's polls,
which lay out and paint the screen from the test every 20 ms and post a message to every widget;
it now waits without them (:func:`tests.tui.conftest.wait_quietly`): 1 tick of 404-461 in 2 of
8 runs (58 ms), none in the other 6. Earlier levers:
each frame used to be laid out and painted twice (see :mod:`agentsh.tui.one_pass_layout`) and
to measure and draw again what had not changed (see
:mod:`agentsh.tui.widgets.steady_containers`). It was marked as an expected failure until the
limit followed the machine's speed (:func:`tests.tui.test_ui_loop_responsive.blocked_limit_s`):
on the machine that limit was set on, the worst tick of a run was 16-28 ms of CPU (3 runs, and
12-20 ms in 3 runs beside two busy loops).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentsh.events import AssistantMessage as AssistantEvent
from agentsh.events import Event, StatusChanged, TextDelta, TurnEnded, TurnOutcome, TurnStarted
from agentsh.session.entries import Role, StopReason
from agentsh.tui.widgets.messages import AssistantMessage
from tests.tui.conftest import MakeApp, fake_factory, ready, submit, wait_for, wait_quietly
from tests.tui.fake_agent import FakeAgent
from tests.tui.test_ui_loop_responsive import (
    LoopProbe,
    StackSampler,
    assert_never_blocked,
    measured_twice,
)

pytestmark = pytest.mark.asyncio

CHARS_PER_S = 4_000  # about 1,000 tokens a second
PIECE = 12  # characters a chunk (a few tokens), as providers send them
WORDS = ["parser", "token", "window", "scope", "reads", "writes", "file", "module", "cache"]


def markdown_reply(blocks: int) -> str:
    """A reply as models write them: a heading now and then, paragraphs, lists, code."""
    parts: list[str] = []
    for n in range(blocks):
        words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(48)]
        match n % 5:
            case 0:
                parts.append(f"## Part {n}: {words[0]} {words[1]}")
            case 1 | 3:
                parts.append(" ".join(words).capitalize() + ". Some **bold** and `code` too.")
            case 2:
                parts.append("\n".join(f"- {' '.join(words[i : i + 8])}" for i in (0, 8, 16, 24)))
            case _:
                code = "\n".join(f"    return data + {i}" for i in range(4))
                parts.append(f"```python\ndef step_{n}(data):\n{code}\n```")
    return "\n\n".join(parts)


REPLY = markdown_reply(60)  # about 2,000 tokens


async def streamed(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
    """Log the message; stream :data:`REPLY` paced by the loop's clock (a piece that is due
    late goes at once, as a backlog reaches the UI from the model worker); log the reply."""
    user = agent.session.append_message(Role.USER, text)
    yield TurnStarted(user.id, text)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i in range(0, len(REPLY), PIECE):
        if (wait := start + i / CHARS_PER_S - loop.time()) > 0:
            await asyncio.sleep(wait)
        yield TextDelta(REPLY[i : i + PIECE])
    entry = agent.session.append_message(Role.ASSISTANT, REPLY, stop_reason=StopReason.STOP)
    yield AssistantEvent(entry.id, REPLY, (), "stop")
    yield StatusChanged(agent.status())
    yield TurnEnded(TurnOutcome.DONE, text=REPLY)


async def test_painting_a_streamed_markdown_reply_never_holds_the_ui_loop(
    make_app: MakeApp,
) -> None:
    async def one_run() -> tuple[LoopProbe, StackSampler]:
        app = make_app(factory=fake_factory(script=streamed))
        sampler = StackSampler()
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(pilot, app)
            await submit(pilot, app, "an earlier question")  # a reply above, as in a session
            await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=120)
            probe = LoopProbe()
            await app.screen.mount(probe)
            sampler.start()
            try:
                await submit(pilot, app, "and another")
                await wait_quietly(lambda: not app.controller.turn_running, limit_s=120)
            finally:
                sampler.stopped.set()
            probe.remove()
            await pilot.pause()
            replies = app.query(AssistantMessage)
            assert len(replies) == 2 and replies.last().body.source == REPLY
        sampler.join()
        return probe, sampler

    probe, sampler, limit_s = await measured_twice(one_run)
    assert len(probe.samples) > 50, "the probe hardly ticked"
    assert_never_blocked(probe, sampler, limit_s)
