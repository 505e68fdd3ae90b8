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
