"""Tree pane: opening it on a 10,000-entry session with 200 branch points, and switching branches.

The App runs headless (Textual's ``run_test``) at 120x40 with the scripted stand-in agent, on a
session built in memory: 2,500 exchanges (user message, a reply that calls bash, the result, a
final reply) where every 50th entry starts a new branch from an earlier reply, so the tree has
10,000 entries and 200 branch points. A time runs from the action (the key's action called
directly, so the test harness's own key delivery is not counted) to the end of the first frame
(a compositor refresh, layout included) that shows the result:

1. open: F4 on an App whose panel was never shown (its tabs and tree pane were built, hidden,
   when the first session opened; this session's rows are computed on the key) until the
   tree's first screenful is drawn. Goal: under 150 ms. Median of 5 fresh Apps, at 120x40 (the
   panel beside the chat, which re-wraps its messages to the narrower width) and at 80x24 (the
   panel in the chat's place).
2. reopen: F4 to close, a turn (an entry appended), F4 to open again: the tree's rows are
   rebuilt for the grown session on the key. Median of 10.
3. switch: Enter in the tree on the newest entry of another branch: the leaf moves (a ``leaf``
   record), the tree's active path and the status bar are redrawn (the figure; goal: under
   50 ms), then the chat is re-projected from the log; the time until it is painted is printed
   beside it. Median of 20 switches among the branches.
4. cursor: Down in the tree (the next row highlighted, the footer's position updated).

    .venv/bin/python benchmarks/bench_tree_pane.py

The last line is ``tree_pane_switch_10000_entries: <median> ms``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.widget import Widget

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("AGENTSH_HOME", tempfile.mkdtemp(prefix="agentsh-bench-"))
os.environ.setdefault("AGENTSH_NO_OLLAMA_PROBE", "1")

from agentsh.config import load_environment  # noqa: E402
from agentsh.events import ContextStatus  # noqa: E402
from agentsh.session.entries import MessageEntry, Role, StopReason, ToolCall  # noqa: E402
from agentsh.session.log import gc_paused  # noqa: E402
from agentsh.session.session import Session  # noqa: E402
from agentsh.tui.app import AgentshApp  # noqa: E402
from agentsh.tui.options import LaunchOptions  # noqa: E402
from agentsh.tui.panes.tree_pane import TreePane, TreeView  # noqa: E402
from agentsh.tui.projection import ChatItem, project  # noqa: E402
from agentsh.tui.widgets.chat import ChatView  # noqa: E402
from agentsh.tui.widgets.composer import PromptInput  # noqa: E402
from tests.tui.fake_agent import FakeAgent  # noqa: E402

ENTRIES = 10_000
BRANCH_POINTS = 200


def build_session(cwd: Path, entries: int = ENTRIES, forks: int = BRANCH_POINTS) -> Session:
    """``entries`` entries in exchanges of four; ``forks`` times, evenly spread, the next
    exchange starts a new branch at a reply that has none yet (so each is a new fork)."""
    rng = random.Random(7)
    s = Session.create(None, cwd)
    replies: list[str] = []
    forked: set[str] = set()
    exchanges = entries // 4
    fork_at = {round((i + 0.5) * exchanges / forks) for i in range(forks)}
    made = 0
    while made < entries:
        n = made // 4
        if n in fork_at:
            free = [r for r in replies[:-1] if r not in forked and s.tree.children_of(r)]
            if free:
                point = rng.choice(free)
                forked.add(point)
                s.move_leaf(point)  # the next exchange is a sibling of the point's child
        s.append_message(Role.USER, f"step {n}: make module_{n % 97}.py pass its tests")
        call = ToolCall(f"c{n}", "bash", json.dumps({"command": f"pytest -q tests/test_{n}.py"}))
        s.append_message(Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS)
        s.append_tool_result(f"c{n}", "bash", f"{n % 7} failed, {n % 11} passed")
        reply = s.append_message(
            Role.ASSISTANT,
            f"Fixed **module_{n % 97}.py**: the loop now stops at the end.",
            stop_reason=StopReason.STOP,
        )
        replies.append(reply.id)
        made += 4
    return s


def _app(cwd: Path) -> AgentshApp:
    status = ContextStatus(model="openai/test-model", window=128_000)
    # No model behind the agent: leaving a branch then offers no summary (a prompt that would
    # wait for a key), and the figures are the switch's own.
    return AgentshApp(
        load_environment(cwd),
        LaunchOptions(no_session=True),
        agent_factory=lambda _e, s, _o: FakeAgent(s, model=None, status=status),
        cwd=cwd,
        watch_themes=False,
    )


class Frames:
    """When frames end (the screen's compositor refresh), when the tree drew a line, and when
    a frame first showed the chat a switch asked for (:meth:`watch_chat`)."""

    def __init__(self, app: AgentshApp) -> None:
        self.ends: list[float] = []
        self.tree_lines: list[float] = []
        self._chat_test: Callable[[], bool] | None = None
        self.chat_painted: float | None = None
        screen: Any = app.screen
        refresh = screen._compositor_refresh

        def timed_refresh() -> None:
            refresh()
            end = time.perf_counter()
            self.ends.append(end)
            if self._chat_test is not None and self._chat_test():
                self._chat_test = None
                self.chat_painted = end

        screen._compositor_refresh = timed_refresh
        render_line = TreeView.render_line
        frames = self

        def timed_render_line(view: TreeView, y: int) -> Any:
            frames.tree_lines.append(time.perf_counter())
            return render_line(view, y)

        TreeView.render_line = timed_render_line  # type: ignore[method-assign,assignment]

    async def shown(self, since: float) -> float:
        """Seconds from ``since`` to the end of the first frame in which the tree drew."""
        while True:
            drawn = [t for t in self.tree_lines if t >= since]
            if drawn:
                ends = [e for e in self.ends if e >= drawn[0]]
                if ends:
                    return ends[0] - since
            await asyncio.sleep(0.001)

    def watch_chat(self, chat: ChatView, last: ChatItem) -> None:
        """Note the end of the first frame in which the chat shows a transcript ending with
        ``last``: every row of its window mounted with its whole subtree (markdown blocks
        included) and displayed, and its newest row laid out on screen."""
        self.chat_painted = None

        def shown() -> bool:
            rows = chat.rows
            if not rows or rows[-1].item != last:
                return False
            for row in rows[chat.first : chat.last]:
                widget = row.widget
                if widget is None or not widget.display or not widget.is_mounted:
                    return False
                if not all(child.is_mounted for child in widget.walk_children(Widget)):
                    return False
            newest = rows[-1].widget
            return newest is not None and newest.region.height > 0

        self._chat_test = shown

    async def chat_shown(self, since: float) -> float:
        """Seconds from ``since`` to the frame :meth:`watch_chat` waits for."""
        deadline = time.perf_counter() + 5.0
        while self.chat_painted is None:
            if time.perf_counter() > deadline:
                raise RuntimeError("the chat never showed the new branch")
            await asyncio.sleep(0.001)
        return self.chat_painted - since

    async def next_frame(self, since: float, after: float) -> float:
        """Seconds from ``since`` to the end of the first frame after ``after`` (the work
        done, its result painted); ``after`` itself when nothing was left to paint."""
        deadline = time.perf_counter() + 1.0
        while time.perf_counter() < deadline:
            ends = [e for e in self.ends if e >= after]
            if ends:
                return ends[0] - since
            await asyncio.sleep(0.001)
        return after - since


async def _until(pilot: Any, predicate: Any) -> None:
    while not predicate():
        await pilot.pause(0.01)


async def _settle(pilot: Any) -> None:
    await pilot.pause(0.2)


async def _ready_app(app: AgentshApp, pilot: Any, session: Session) -> Frames:
    await _until(pilot, lambda: app.controller.ready)
    app.query_one(PromptInput).cursor_blink = False
    await app.controller.switch_session(session)
    await _settle(pilot)
    return Frames(app)


async def measure_open(cwd: Path, session: Session, size: tuple[int, int]) -> tuple[float, float]:
    """(first open, median reopen) in ms on one fresh App."""
    app = _app(cwd)
    async with app.run_test(size=size) as pilot:
        frames = await _ready_app(app, pilot, session)
        start = time.perf_counter()
        await app.run_action("toggle_pane('tree')")
        first = await frames.shown(start) * 1000
        await _settle(pilot)
        again: list[float] = []
        for i in range(10):
            await app.run_action("toggle_pane('tree')")
            # A turn happened while the tree was closed: its rows are rebuilt on the key.
            session.append_message(Role.USER, f"one more thing ({i})")
            app.controller.path_changed.publish("turn")
            await _settle(pilot)
            start = time.perf_counter()
            await app.run_action("toggle_pane('tree')")
            again.append(await frames.shown(start) * 1000)
            await _settle(pilot)
        return first, statistics.median(again)


@dataclass(frozen=True, slots=True)
class SwitchTimes:
    """Medians in ms."""

    in_tree: float  # Enter in the tree: the tree and the status bar show the switch
    chat: float  # ... and the chat of the new branch is painted
    done: float  # ... and the switch's work is over (old widgets gone): the frame after it
    reprojection: float  # ChatView.load alone
    sibling_chat: float  # Alt+Left/Right between two replies to an edited last message
    sibling_tree: float
    cursor: float  # Down in the tree


def _last_item(session: Session, target: str) -> ChatItem:
    return project(session.tree.path(target), tree=session.tree)[-1]


def _edit_last_message(session: Session) -> str:
    """Answer the leaf's last user message a second way (a sibling branch, as Enter on a
    selected message and a send make it); the new leaf's id."""
    user = next(
        e for e in reversed(session.current_path())
        if isinstance(e, MessageEntry) and e.role is Role.USER
    )  # fmt: skip
    session.move_leaf(user.parent_id)
    session.append_message(Role.USER, user.content + " (and keep the old API)")
    call = ToolCall("edit-1", "bash", json.dumps({"command": "pytest -q"}))
    session.append_message(
        Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
    )
    session.append_tool_result("edit-1", "bash", "12 passed")
    reply = session.append_message(
        Role.ASSISTANT, "Kept `old_api()` as a wrapper; **12 passed**.", stop_reason=StopReason.STOP
    )
    return reply.id


async def measure_switch(cwd: Path, session: Session, switches: int = 20) -> SwitchTimes:
    app = _app(cwd)
    async with app.run_test(size=(120, 40)) as pilot:
        frames = await _ready_app(app, pilot, session)
        await app.run_action("toggle_pane('tree')")
        await _until(pilot, lambda: bool(app.query(TreeView)))
        await _settle(pilot)
        view = app.query_one(TreeView)
        chat = app.query_one(ChatView)
        branching = app.controller.branching
        tree = session.tree
        targets = [tree.deepest_leaf(kid) for point in tree.branch_points()
                   for kid in tree.children_of(point)]  # fmt: skip
        rng = random.Random(3)
        loads: list[float] = []
        load = chat.load

        async def timed_load(items: Any, **options: Any) -> None:
            start = time.perf_counter()
            await load(items, **options)
            loads.append((time.perf_counter() - start) * 1000)

        chat.load = timed_load  # type: ignore[method-assign]
        in_tree: list[float] = []
        painted: list[float] = []
        done: list[float] = []
        for _ in range(switches):
            target = rng.choice([t for t in targets if t != session.leaf_id])
            view.move_cursor(view.model.index_of(target) or 0)
            await _settle(pilot)
            frames.watch_chat(chat, _last_item(session, target))
            start = time.perf_counter()
            await branching.choose(target)
            assert session.leaf_id == target
            done.append(await frames.next_frame(start, time.perf_counter()) * 1000)
            painted.append(await frames.chat_shown(start) * 1000)
            in_tree.append(await frames.shown(start) * 1000)
            await _settle(pilot)
        # Alt+Left / Alt+Right at the nearest fork: the branches share all but one exchange.
        first = session.leaf_id
        assert first is not None
        second = _edit_last_message(session)
        await branching.reproject()
        await _settle(pilot)
        sibling_chat: list[float] = []
        sibling_tree: list[float] = []
        for _ in range(switches):
            position = tree.branch_position()
            target = first if session.leaf_id == second else second
            step = -1 if position.index == position.count else +1
            frames.watch_chat(chat, _last_item(session, target))
            start = time.perf_counter()
            await branching.switch_branch(step)
            assert session.leaf_id == target
            sibling_chat.append(await frames.chat_shown(start) * 1000)
            sibling_tree.append(await frames.shown(start) * 1000)
            await _settle(pilot)
        moves: list[float] = []
        pane = app.query_one(TreePane)
        for _ in range(20):
            start = time.perf_counter()
            pane.action_cursor_up()
            moves.append(await frames.shown(start) * 1000)
            await pilot.pause(0.05)
        return SwitchTimes(
            in_tree=statistics.median(in_tree),
            chat=statistics.median(painted),
            done=statistics.median(done),
            reprojection=statistics.median(loads),
            sibling_chat=statistics.median(sibling_chat),
            sibling_tree=statistics.median(sibling_tree),
            cursor=statistics.median(moves),
        )


async def main() -> None:
    cwd = Path(tempfile.mkdtemp(prefix="agentsh-bench-project-"))
    start = time.perf_counter()
    with gc_paused(promote=True):  # as a load from disk leaves it (agentsh.session.log)
        session = build_session(cwd)
    built = time.perf_counter() - start
    points = len(session.tree.branch_points())
    print(f"session: {len(session.tree):,} entries, {points} branch points ({built:.1f} s)")
    results: dict[tuple[int, int], tuple[list[float], list[float]]] = {}
    for size in ((120, 40), (80, 24)):
        firsts: list[float] = []
        reopens: list[float] = []
        for _ in range(5):
            first, reopen = await measure_open(cwd, session, size)
            firsts.append(first)
            reopens.append(reopen)
        results[size] = (firsts, reopens)
        print(f"open at {size[0]}x{size[1]}: first {statistics.median(firsts):.1f} ms "
              f"(runs: {', '.join(f'{t:.0f}' for t in firsts)}), "
              f"reopen {statistics.median(reopens):.1f} ms")  # fmt: skip
    with gc_paused(promote=True):  # a fresh copy: the open runs appended to the first
        session = build_session(cwd)
    times = await measure_switch(cwd, session)
    print(f"switch: tree and status show it in {times.in_tree:.1f} ms; the chat of the new "
          f"branch is painted at {times.chat:.1f} ms; the switch is over (the old branch's "
          f"widgets removed) at {times.done:.1f} ms "
          f"(ChatView.load: {times.reprojection:.1f} ms)")  # fmt: skip
    print(f"Alt+Left/Right between two answers to an edited last message: tree and status "
          f"{times.sibling_tree:.1f} ms, chat painted {times.sibling_chat:.1f} ms")  # fmt: skip
    print(f"cursor move in the tree: {times.cursor:.1f} ms")
    narrow = statistics.median(results[(80, 24)][0])
    wide = statistics.median(results[(120, 40)][0])
    print(f"tree_pane_open_10000_entries (80x24, in the chat's place): {narrow:.1f} ms")
    print(f"tree_pane_open_10000_entries (120x40, beside the chat): {wide:.1f} ms")
    print(f"tree_pane_switch_chat_painted_10000_entries: {times.chat:.1f} ms")
    print(f"tree_pane_switch_10000_entries: {times.in_tree:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
