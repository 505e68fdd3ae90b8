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
from tests.tui.conftest import MakeApp, ready

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
    collector.last_input = time.monotonic() - quiet_gc.QUIET_S - 0.1
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


@needs_generational
def test_what_survives_an_idle_collection_is_frozen(collector: QuietCollector) -> None:
    """A reply leaves ~90,000 objects in the chat: each made every later full collection longer,
    the forced ones in the middle of a stream included. Survivors are walked no more."""
    collector.install()
    gc.collect()
    survivor = Node()
    frozen = gc.get_freeze_count()
    _young_collections(10)
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick()
    assert gc.get_freeze_count() > frozen
    assert not any(o is survivor for o in gc.get_objects()), "still walked by every collection"
    # A collection forced while busy is not an idle one: what the turn made is not frozen.
    during_turn = Node()
    _young_collections(10 * quiet_gc.FORCE_AFTER)
    assert collector.tick(busy=True)
    assert any(o is during_turn for o in gc.get_objects())


@needs_generational
def test_frozen_garbage_is_reclaimed_by_a_thaw_when_nobody_types(
    collector: QuietCollector,
) -> None:
    """Freezing survivors must not keep their cyclic garbage for good (a chat replaced by a
    session switch): a long quiet moment after a few idle collections unfreezes and collects."""
    collector.install()
    gc.collect()
    cycle = Node()
    cycle.other = Node()
    cycle.other.other = cycle
    watch = weakref.ref(cycle)
    _young_collections(10)
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick()  # the cycle is alive: frozen with the survivors
    del cycle
    for _ in range(quiet_gc.THAW_AFTER - 1):
        _young_collections(10)
        assert collector.tick()
    assert watch() is not None, "frozen: no idle collection walks it"
    assert collector.thaws == 0
    _young_collections(10)
    _quiet_for(collector, quiet_gc.THAW_QUIET_S + 0.1)
    assert collector.tick()
    assert collector.thaws == 1
    assert watch() is None, "the thaw reclaimed it"


@needs_generational
def test_frozen_garbage_stays_bounded_without_long_quiet_moments(
    collector: QuietCollector,
) -> None:
    collector.install()
    for _ in range(quiet_gc.THAW_FORCE):
        gc.collect()
        _young_collections(10)
        _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
        assert collector.tick()
    assert collector.thaws == 0
    _quiet_for(collector, quiet_gc.QUIET_S + 0.1)
    assert collector.tick(), "a thaw does not wait for a due collection"
    assert collector.thaws == 1


@pytest.mark.asyncio
@needs_generational
async def test_the_app_collects_on_its_own_terms_while_it_runs(make_app: MakeApp) -> None:
    before = gc.get_threshold()
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert gc.get_threshold()[2] > 1_000_000
        assert gc.get_freeze_count() > 0
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
