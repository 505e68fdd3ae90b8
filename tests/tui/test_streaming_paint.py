"""A streamed reply is painted in frames, and ends up exactly as the log's text renders.

Each frame takes all the text that has arrived, up to a bound: only a burst longer than that is
painted over several frames, so the keyboard gets its turns between them; the finished body is
the same blocks a resume composes from the logged text.
"""

from __future__ import annotations

import time
from itertools import pairwise

import pytest
from textual.app import App, ComposeResult
from textual.await_complete import AwaitComplete
from textual.widgets._markdown import MarkdownBlock

from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.markdown_body import markdown as _markdown
from agentsh.tui.widgets.messages import FRAME_CHARS, TYPING_FRAME_CHARS, AssistantMessage
from tests.tui.conftest import MakeApp, ready, wait_for

pytestmark = pytest.mark.asyncio

FENCE = "```python\n" + "\n".join(f"x_{i} = {i}  # a line of code" for i in range(80)) + "\n```"
REPLY = "\n\n".join(
    [
        *(f"Paragraph {i}: " + "some **bold** words " * 12 for i in range(40)),
        FENCE,
        "\n".join(f"- item {i} with `code`" for i in range(30)),
        "| a | b |\n|--:|:-:|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(20)),
        "The end.",
    ]
)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield AssistantMessage(live=True)


def _blocks(widget: object) -> list[tuple[str, str | None]]:
    assert isinstance(widget, AssistantMessage)
    return [
        (type(block).__name__, block.source)
        for block in widget.body.children
        if isinstance(block, MarkdownBlock)
    ]


async def test_a_reply_that_arrives_in_one_burst_is_painted_over_several_frames() -> None:
    assert len(REPLY) > FRAME_CHARS
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        await reply.append(REPLY)
        await wait_for(pilot, lambda: reply.body.source != "")
        first = reply.body.source
        # The first frame paints a share of it at once, not the whole reply after a long stall.
        assert 0 < len(first) <= FRAME_CHARS and REPLY.startswith(first)
        await reply.finish(text=REPLY)
        assert reply.body.source == REPLY
        painted = _blocks(reply)
        # The same blocks as the reply composed from the log (a resume, a branch switch).
        logged = AssistantMessage(REPLY)
        await app.screen.mount(logged)
        await pilot.pause()
        assert painted == _blocks(logged)
        assert [name for name, _ in painted].count("MarkdownFence") == 1


async def test_a_reply_streamed_in_small_pieces_ends_as_its_text_renders() -> None:
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        for start in range(0, len(REPLY), 37):
            await reply.append(REPLY[start : start + 37])
            if start % 370 == 0:
                await pilot.pause(0.02)
        await reply.finish(text=REPLY)
        whole = _markdown(REPLY, "message-body")
        await app.screen.mount(whole)
        await pilot.pause()
        assert reply.body.source == REPLY
        assert [type(b).__name__ for b in reply.body.children] == [
            type(b).__name__ for b in whole.children
        ]


async def test_frames_leave_the_ui_loop_to_keys_however_slow_the_machine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first text after a pause waits for no beat; then frames start every FLUSH_S, and
    after a frame that took long (a loaded machine: it waited for a core) the next one waits
    PAINT_REST times as long while the user types, so painting takes at most PAINT_SHARE of
    the UI loop, and at most REST_MAX_S while nobody types, so the reply keeps up. Before the
    rests, a slow frame was followed 5 ms later: frames ran back to back and keys waited
    behind them (p99 1.3 s while a reply streamed at load 9). Then it always rested PAINT_REST
    times as long: at load 10-17 a reply streamed at 1,000 tokens/s was painted far slower than
    it came, and its last word showed 5.6-8.6 s after the last chunk."""
    from types import SimpleNamespace

    from agentsh.tui.widgets import messages

    clock = [100.0]
    monkeypatch.setattr(messages, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    typing = [True]
    monkeypatch.setattr(messages, "typing", lambda: typing[0])
    monkeypatch.setattr(messages, "last_key", lambda: float("-inf"))  # no pace: no pauses
    monkeypatch.setattr(messages, "key_gap", lambda: 0.0)
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        delays: list[float] = []
        set_timer = reply.set_timer

        def recording_timer(delay: float, callback: object) -> object:
            delays.append(delay)
            return set_timer(delay, callback)  # type: ignore[arg-type]

        monkeypatch.setattr(reply, "set_timer", recording_timer)
        await reply.append("first words")
        assert delays == [messages.FRAME_GAP_S]
        await wait_for(pilot, lambda: reply.body.source == "first words" and not reply._drawing)
        await reply.append(" more")  # in the same beat: it waits for the next one
        assert delays[-1] == pytest.approx(messages.FLUSH_S)
        clock[0] += messages.FLUSH_S  # (the timer waits in real time; the frame reads this)
        await wait_for(pilot, lambda: reply.body.source.endswith("more") and not reply._drawing)

        paint = reply._paint_frame

        async def slow_paint(limit: int = messages.FRAME_CHARS) -> bool:
            clock[0] += 0.3  # a frame that took 0.3 s, append to screen
            return await paint(limit)

        monkeypatch.setattr(reply, "_paint_frame", slow_paint)
        clock[0] += 1.0  # a pause: the next text is painted at once, slowly
        await reply.append(" and then")
        assert delays[-1] == messages.FRAME_GAP_S
        await wait_for(pilot, lambda: reply.body.source.endswith("then") and not reply._drawing)
        await reply.append(" some")  # the user types, and leaves no pause a frame fits in
        assert reply._latest_frame == pytest.approx(clock[0] + 0.3 * messages.PAINT_REST)
        assert messages.PAINT_REST >= 2  # frames take at most a third of the loop
        await pilot.pause(0.1)
        assert not reply.body.source.endswith("some")  # (this clock stands still meanwhile)
        clock[0] += 0.3 * messages.PAINT_REST
        await wait_for(pilot, lambda: reply.body.source.endswith("some") and not reply._drawing)

        typing[0] = False  # nobody types: a slow frame rests no longer than a beat
        await reply.append(" more")
        await wait_for(pilot, lambda: reply.body.source.endswith("more") and not reply._drawing)
        await reply.append(" words")
        assert delays[-1] == pytest.approx(messages.REST_MAX_S)
        assert messages.REST_MAX_S <= messages.FLUSH_S  # a frame at least every two beats
        text = "first words more and then some more words"
        await reply.finish(text=text)
        assert reply.body.source == text


async def test_what_is_left_when_a_reply_ends_is_painted_in_bounded_frames_each_on_screen() -> None:
    """A backlog (a burst, a screen that fell behind) is painted when the reply ends in frames of
    at most FRAME_CHARS, each laid out before the next is appended: a key waits for one frame at
    most. Before, a frame took a quarter of the backlog (4,000 characters of a 16,000 one, about
    30 blocks: seconds on a loaded machine), and the next was appended 5 ms later, whether or
    not the screen had drawn the last."""
    app = Host()
    backlog = (REPLY * 2)[: 3 * FRAME_CHARS]
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        layouts = [0]
        app.screen.screen_layout_refresh_signal.subscribe(
            reply, lambda _screen: layouts.__setitem__(0, layouts[0] + 1)
        )
        appended: list[tuple[int, int]] = []  # (characters, layouts done before the append)
        body = reply.body
        append = body.append

        def recording_append(text: str) -> AwaitComplete:
            appended.append((len(text), layouts[0]))
            return append(text)

        body.append = recording_append  # type: ignore[method-assign,assignment]
        reply._unsent = [backlog]  # as if it all arrived before a frame could start
        reply.text = backlog
        await reply.finish()
        await pilot.pause()
        assert body.source == backlog
        assert len(appended) >= 3
        assert all(size <= FRAME_CHARS for size, _ in appended)
        done_before = [count for _, count in appended]
        assert all(b > a for a, b in pairwise(done_before)), done_before


async def test_keys_in_the_editor_tell_a_streamed_reply_the_user_types(make_app: MakeApp) -> None:
    """What the frames' rest is chosen by (above): a key pressed in the editor, and a key the
    App puts there for the user (the editor not focused), both count as typing."""
    from agentsh.tui.widgets import typing_clock

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        before = time.monotonic()
        await pilot.press("a")
        # (not typing() itself: on a loaded machine a second can pass before this line runs)
        assert typing_clock._last_key >= before
        app.query_one(ChatView).focus()
        await pilot.pause()
        before = time.monotonic()
        await pilot.press("b")
        assert app.query_one(PromptInput).text == "ab"
        assert typing_clock._last_key >= before


async def test_a_frame_paints_all_the_text_that_has_arrived(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Text that came while a frame waited is painted by that frame, all of it, while nobody
    types: capped at 1,600 characters a frame, a reply streamed at 1,000 tokens/s on a loaded
    machine fell behind and its last word showed 2-4 s after its last chunk. While the user
    types, frames stay bounded (they rest three times as long as they took, so an unbounded
    one would carry more text each time, and stall the keys longer each time)."""
    from agentsh.tui.widgets import messages

    arrived = REPLY[: 2 * TYPING_FRAME_CHARS + 500]
    assert len(arrived) > 2 * TYPING_FRAME_CHARS
    typing = [False]
    monkeypatch.setattr(messages, "typing", lambda: typing[0])
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        reply = app.query_one(AssistantMessage)
        for start in range(0, len(arrived), 40):  # pieces, all in before the first frame
            await reply.append(arrived[start : start + 40])
        await wait_for(pilot, lambda: reply.body.source != "")
        assert reply.body.source == arrived  # in one frame
        await wait_for(pilot, lambda: not reply._drawing)

        typing[0] = True
        more = REPLY[len(arrived) : len(arrived) + 2 * TYPING_FRAME_CHARS + 500]
        await reply.append(more)
        await wait_for(pilot, lambda: reply.body.source != arrived)
        shown = len(reply.body.source) - len(arrived)
        assert 0 < shown <= TYPING_FRAME_CHARS
        await reply.finish(text=arrived + more)
        assert reply.body.source == arrived + more


async def test_the_message_sent_is_not_typing(make_app: MakeApp) -> None:
    """Enter sends the message: from then the user waits for the reply and is not typing, so
    its first frames do not rest as if they were (they did, for a second after every Enter)."""
    from agentsh.tui.widgets import typing_clock

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hi")
        assert typing_clock.typing()
        await pilot.press("enter")
        await pilot.pause()
        assert not typing_clock.typing()
        await pilot.press("x")  # typing again (during the reply) counts again
        assert typing_clock.typing()


async def test_the_users_pace_is_the_time_between_their_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The median gap between keys; the editor's text changing after a key (or put there by
    the App) moves the clock but is no key, so it does not halve the pace; a message sent,
    or a break longer than a second, starts the pace again."""
    from types import SimpleNamespace

    from agentsh.tui.widgets import typing_clock

    now = [1_000.0]
    monkeypatch.setattr(typing_clock, "time", SimpleNamespace(monotonic=lambda: now[0]))
    typing_clock.message_sent()
    assert typing_clock.key_gap() == 0.0
    for gap in (0.0, 0.12, 0.10, 0.30, 0.11):
        now[0] += gap
        typing_clock.key_typed()
        now[0] += 0.004
        typing_clock.text_typed()  # the change the key made
        now[0] -= 0.004
    assert typing_clock.key_gap() == pytest.approx(0.115)
    assert typing_clock.last_key() == pytest.approx(now[0] + 0.004)
    now[0] += 5.0  # a break
    typing_clock.key_typed()
    assert typing_clock.key_gap() == pytest.approx(0.115)  # the break is no gap
    typing_clock.message_sent()
    assert typing_clock.key_gap() == 0.0 and not typing_clock.typing()


@pytest.mark.parametrize(
    ("since_key", "gap", "latest_in", "waits"),
    [
        (0.030, 0.500, 10.0, False),  # a person's pace: the next key is not due for a while
        (0.001, 0.500, 10.0, True),  # just typed: its echo is painted first
        (0.030, 0.020, 10.0, True),  # keys back to back: no pause holds a frame
        (0.030, 0.060, 10.0, True),  # the next key is due before a frame like the last ends
        (0.030, 0.020, -1.0, False),  # ... but the latest a frame may start has come
    ],
)
async def test_a_frame_waits_for_a_pause_between_keys(
    monkeypatch: pytest.MonkeyPatch, since_key: float, gap: float, latest_in: float, waits: bool
) -> None:
    """While the user types, a frame (the last took 50 ms) starts in a pause between keys
    that it fits in, or when the rest after the last frame is over. Stepped once: whether it
    waits (sleeps) or returns is the decision, not a time."""
    from agentsh.tui.widgets import messages

    now = time.monotonic()
    monkeypatch.setattr(messages, "typing", lambda: True)
    monkeypatch.setattr(messages, "last_key", lambda: now - since_key)
    monkeypatch.setattr(messages, "key_gap", lambda: gap)
    reply = AssistantMessage(live=True)
    reply._frame_took = 0.05
    reply._latest_frame = now + latest_in
    pause = reply._pause_between_keys()
    try:
        pause.send(None)
    except StopIteration:
        assert not waits
    else:
        assert waits
    finally:
        pause.close()


async def test_nobody_typing_a_frame_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentsh.tui.widgets import messages

    monkeypatch.setattr(messages, "typing", lambda: False)
    reply = AssistantMessage(live=True)
    reply._latest_frame = time.monotonic() + 10
    with pytest.raises(StopIteration):
        reply._pause_between_keys().send(None)


async def test_the_rest_of_a_reply_is_painted_when_the_provider_says_it_is_over(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the provider's finish reason (``TextEnded``), not at the next frame's beat nor when
    the reply is logged, which waits for its usage."""
    import asyncio
    from collections.abc import AsyncIterator

    from agentsh.events import AssistantMessage as Logged
    from agentsh.events import Event, TextDelta, TextEnded, TurnEnded, TurnOutcome, TurnStarted
    from agentsh.session.entries import Role, StopReason
    from agentsh.tui.widgets import messages
    from tests.tui.conftest import fake_factory, submit
    from tests.tui.fake_agent import FakeAgent

    monkeypatch.setattr(messages, "FLUSH_S", 60.0)  # the next frame's beat: not in this test
    monkeypatch.setattr(messages, "REST_MAX_S", 60.0)
    text = "First words, painted at once. " + "then more words " * 40 + "and the last word."
    logged = asyncio.Event()

    async def script(agent: FakeAgent, message: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, message)
        yield TurnStarted(user.id, message)
        yield TextDelta(text[:30])
        await asyncio.sleep(0.05)  # that first frame is painted
        yield TextDelta(text[30:])
        yield TextEnded("stop")
        await logged.wait()  # the usage has not come yet
        entry = agent.session.append_message(Role.ASSISTANT, text, stop_reason=StopReason.STOP)
        yield Logged(entry.id, text, (), "stop")
        yield TurnEnded(TurnOutcome.DONE, text=text)

    app = make_app(factory=fake_factory(script=script))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "go")
        reply = app.query_one(AssistantMessage)
        await wait_for(pilot, lambda: reply.body.source == text, limit_s=10)
        assert app.controller.turn_running and reply.live  # not logged yet
        logged.set()
        await wait_for(pilot, lambda: not app.controller.turn_running)
        assert reply.body.source == text and not reply.live
