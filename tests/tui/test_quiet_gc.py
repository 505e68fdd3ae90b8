"""Full garbage collections wait for an idle app: none runs while keys come or a turn runs.

A full collection walks every tracked object (a few hundred thousand in the TUI): 70-150 ms of
CPU during which no key is echoed. While the app runs, the objects it started with are frozen,
automatic full collections are off, and one runs when the app is idle and one is due (or, far
overdue, whatever happens).
"""

from __future__ import annotations

import gc
import sys
import time
import weakref
from collections.abc import Iterator

import pytest

from agentsh.tui import quiet_gc
from agentsh.tui.quiet_gc import QuietCollector
from tests.tui.conftest import MakeApp, idle, ready, submit, wait_for

needs_generational = pytest.mark.skipif(
    sys.version_info >= (3, 14), reason="the incremental collector has no full-collection threshold"
)


@pytest.fixture
def collector() -> Iterator[QuietCollector]:
    saved = gc.get_threshold()
    made = QuietCollector()
    try:
        yield made
    finally:
        made.remove()
        gc.set_threshold(*saved)


def _young_collections(count: int) -> None:
    """``count`` young collections (each gen-1 collection brings a full one nearer by one)."""
    for _ in range(count):
        gc.collect(1)


@needs_generational
def test_installed_it_freezes_what_exists_and_stops_automatic_full_collections(
    collector: QuietCollector,
) -> None:
    before = gc.get_threshold()
    collector.install()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[2] > 1_000_000
    collector.remove()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@needs_generational
def test_a_due_collection_waits_for_quiet_input_and_no_running_turn(
    collector: QuietCollector,
) -> None:
    collector.install()
    gc.collect()  # nothing due yet
    collector.input_seen()
    assert not collector.tick()
    _young_collections(10)  # CPython's default: a full collection after 10 of them
    assert not collector.tick(), "a key was just pressed"
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert not collector.tick(busy=True), "a turn is running"
    assert collector.tick()
    assert collector.collections == 1
    assert not collector.tick(), "nothing is due right after a collection"


@needs_generational
def test_a_far_overdue_collection_runs_whatever_happens(collector: QuietCollector) -> None:
    collector.install()
    gc.collect()
    _young_collections(10 * quiet_gc.FORCE_AFTER)
    collector.input_seen()
    assert collector.tick(busy=True)


class Node:
    """A cycle's member that a weak reference can watch."""

    def __init__(self) -> None:
        self.other: Node | None = None


def _quiet_for(collector: QuietCollector, seconds: float) -> None:
    collector.last_input = time.monotonic() - seconds


def _walked(obj: object) -> bool:
    """Whether the next full collection walks ``obj`` (frozen objects it skips)."""
    return any(o is obj for o in gc.get_objects())


def _cycle() -> tuple[Node, weakref.ref[Node]]:
    cycle = Node()
    cycle.other = Node()
    cycle.other.other = cycle
    return cycle, weakref.ref(cycle)


@needs_generational
def test_what_survives_any_full_collection_is_frozen(collector: QuietCollector) -> None:
    """A reply leaves ~90,000 objects in the chat: each made every later full collection
    longer. Whoever runs a full collection (an idle one, one in a turn, a library's), its
    survivors are walked no more."""
    collector.install()
    gc.collect()
    survivor = Node()
    _young_collections(10)
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick()
    assert not _walked(survivor), "still walked by every collection"
    during_turn = Node()
    _young_collections(10 * quiet_gc.FORCE_AFTER)
    collector.input_seen()
    assert collector.tick(busy=True), "far overdue: it runs whatever happens"
    assert not _walked(during_turn), "a collection forced in a turn froze nothing"
    elsewhere = Node()
    gc.collect()
    assert not _walked(elsewhere)
    assert collector.freezes == 3
    assert collector.longest_s > 0


@needs_generational
def test_a_turn_s_end_settles_what_it_made(collector: QuietCollector) -> None:
    """After a turn, what it made is collected and what lives on frozen: the next turn's
    collections walk only what that turn makes. Not while keys come: a tick does it later."""
    collector.install()
    gc.collect()
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert not collector.settle(), "nothing made since the last full collection"
    reply = Node()
    garbage, watch = _cycle()
    del garbage
    _young_collections(1)
    collector.input_seen()
    assert not collector.settle(), "a key was just pressed"
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.settle()
    assert watch() is None, "the turn's cyclic garbage is freed at once"
    assert not _walked(reply)


def _grow_memory(share: float) -> list[str]:
    """Small objects enough to grow the memory blocks in use by ``share``."""
    return [str(i) for i in range(int(sys.getallocatedblocks() * share) + 1_000)]


@needs_generational
def test_an_idle_thaw_collects_the_garbage_made_among_frozen_objects(
    collector: QuietCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freezing survivors must not keep their cyclic garbage for good (a chat replaced by a
    session switch): a long quiet moment, the memory in use having grown, unfreezes
    everything and collects it once."""
    monkeypatch.setattr(quiet_gc, "THAW_QUIET_GROWTH", 0.01)
    collector.install()
    gc.collect()  # what lives now: the measure of growth
    cycle, watch = _cycle()
    _young_collections(10)
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick()  # the cycle is alive: frozen with the survivors
    del cycle
    assert watch() is not None, "frozen: no full collection walks it"
    _quiet_for(collector, quiet_gc.THAW_QUIET_S + 0.1)
    assert not collector.tick(), "the memory in use has not grown: nothing to reclaim"
    grown = _grow_memory(0.02)
    assert not collector.tick(busy=True), "never in a turn"
    assert collector.thaws == 0
    assert collector.tick()
    assert collector.thaws == 1
    assert watch() is None, "the thaw reclaimed it"
    assert not _walked(grown), "what survives a thaw is frozen again"
    assert not collector.tick(), "nothing frozen since: no second thaw"


@needs_generational
def test_frozen_garbage_stays_bounded_without_long_quiet_moments(
    collector: QuietCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory grown by a share of what lived after the last thaw: a thaw at any idle moment."""
    monkeypatch.setattr(quiet_gc, "THAW_GROWTH", 0.01)
    collector.install()
    gc.collect()
    cycle, watch = _cycle()
    _young_collections(1)
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.settle()  # a turn's end: what it made is frozen
    del cycle  # garbage now, among frozen objects
    grown = _grow_memory(0.02)
    collector.input_seen()
    assert not collector.tick(), "a key was just pressed"
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick(), "a thaw does not wait for a due collection"
    assert collector.thaws == 1 and watch() is None
    assert len(grown) > 1_000


@pytest.mark.asyncio
@needs_generational
async def test_the_app_collects_on_its_own_terms_while_it_runs(make_app: MakeApp) -> None:
    before = gc.get_threshold()
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert gc.get_threshold()[2] > 1_000_000
        assert gc.get_freeze_count() > 0
        settled = app._gc.collections
        # A message sent by a script: no key since long ago.
        app._gc.input_seen = lambda: None  # type: ignore[method-assign]
        _quiet_for(app._gc, quiet_gc.QUIET_S + 0.1)
        _young_collections(1)  # what a turn allocates brings a full collection nearer
        await submit(pilot, app, "hello")
        await idle(pilot, app)
        await wait_for(pilot, lambda: app._gc.collections > settled)  # the turn's end
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@needs_generational
def test_start_up_holds_full_collections_until_the_first_frame_puts_the_thresholds_back(
    collector: QuietCollector,
) -> None:
    """From the launcher to the first frame: a young collection every START_UP_YOUNG
    allocations, no full one; the first frame's install sees (and later restores) the
    thresholds the process had, not start-up's."""
    before = gc.get_threshold()
    quiet_gc.hold_for_start_up()
    try:
        assert gc.get_threshold() == (quiet_gc.START_UP_YOUNG, before[1], quiet_gc._OFF)
        quiet_gc.hold_for_start_up()  # twice: the thresholds it keeps are still the first ones
        collector.install()
        assert gc.get_threshold() == (before[0], before[1], quiet_gc._OFF)
        collector.remove()
        assert gc.get_threshold() == before
    finally:
        quiet_gc.end_start_up()
    assert gc.get_threshold() == before


def test_a_launch_that_never_draws_leaves_the_collector_as_it_was(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    from agentsh.tui import launch

    before = gc.get_threshold()
    args = argparse.Namespace(allowed_tools=["Bash(git"], disallowed_tools=None)
    assert launch.main(args) == 2  # a malformed rule: one line, before any frame
    assert gc.get_threshold() == before


def test_start_up_leaves_a_collector_someone_turned_off_alone() -> None:
    before = gc.get_threshold()
    gc.disable()
    try:
        quiet_gc.hold_for_start_up()
        assert gc.get_threshold() == before
    finally:
        gc.enable()
        quiet_gc.end_start_up()
