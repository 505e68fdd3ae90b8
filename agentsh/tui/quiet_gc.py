"""Full garbage collections wait for a quiet keyboard, and each walks only what is new.

CPython's full (oldest-generation) collection walks every object the collector tracks. In the
TUI that is Textual, the chat's widgets and their render caches: a few hundred thousand objects
at start, millions in a long session. One collection held the UI loop for 70-150 ms of CPU at
start, and more as the session grew; each time a key echoed that late.

So, while the app runs, each full collection walks only what is new: the objects that exist
when the first frame is painted (modules, classes, the first screen) are frozen, and so is what
survives any full collection (seen through ``gc.callbacks``, whoever ran it), so no later one
walks them again. Automatic full collections are off; one runs when the app is idle (no turn
running, nothing typed into the editor for :data:`QUIET_S`) and as much has been allocated as
would have started one automatically, or, whatever happens, when :data:`FORCE_AFTER` times
that has; and at the end of each turn, after its last frame, unless keys come
(:meth:`QuietCollector.settle`), so the next turn's collections walk only what it makes. A
collection forced in a turn walked everything made since the last idle one (and froze nothing,
so the next walked it again).

Cyclic garbage among frozen objects (a chat replaced by a session switch, widgets scrolled out
of the transcript window) is reclaimed by a thaw: everything unfrozen and collected once, the
one collection that walks it all, so only when the app is idle (no turn, no key for
:data:`QUIET_S`) and the memory in use has grown by :data:`THAW_GROWTH` of what lived after the
last thaw (by :data:`THAW_QUIET_GROWTH` after :data:`THAW_QUIET_S` without a key): frozen
garbage stays bounded, and a heap that only grows is walked whole a logarithmic number of
times, as CPython's own rule for full collections does (after 5 sessions of 6 streamed
replies: 174-176 MB resident instead of 306-336 MB; ``benchmarks/bench_stream_gc.py``). Young
collections stay automatic:
they are short. Where the collector works otherwise (CPython 3.14's incremental collector)
only the first freeze applies.

Before the first frame (:func:`hold_for_start_up`, from the launcher): a young collection every
:data:`START_UP_YOUNG` allocations and no full one. Start-up makes ~55,000 objects that live as
long as the app; with CPython's thresholds the collector walked them in ~125 young collections
and a full one before the first frame (40-70 ms of its CPU) to find ~2,000 garbage objects.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time

QUIET_S = 1.0  # nothing typed for this long (and no turn): a full collection may run
FORCE_AFTER = 20  # ... and it runs anyway once this many times its due allocations are made
THAW_QUIET_S = 20.0  # nothing typed (and no turn) for this long: frozen garbage may be reclaimed
THAW_QUIET_GROWTH = 0.1  # ... when the memory in use grew by this share since the last thaw
THAW_GROWTH = 1.0  # ... and at any idle moment (a second without keys, no turn) by this one
_OFF = 1 << 30  # a full-collection threshold never reached
START_UP_YOUNG = 20_000  # allocations between two young collections until the first frame

_start_up: tuple[int, int, int] | None = None  # the thresholds start-up set aside


def hold_for_start_up() -> None:
    """Until :meth:`QuietCollector.install` (the first frame) or :func:`end_start_up`: few
    young collections, no full one. A no-op where the collector is off or incremental."""
    global _start_up
    if _start_up is None and gc.isenabled() and sys.version_info < (3, 14):
        _start_up = gc.get_threshold()
        gc.set_threshold(START_UP_YOUNG, _start_up[1], _OFF)


def end_start_up() -> None:
    """Put back the thresholds :func:`hold_for_start_up` set aside (a no-op otherwise)."""
    global _start_up
    if _start_up is not None:
        gc.set_threshold(*_start_up)
        _start_up = None


class QuietCollector:
    """Installed by the app at its first frame, removed when it unmounts."""

    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self._saved: tuple[int, int, int] | None = None
        self._due = 10  # young collections between two full ones, as CPython counts them
        self.collections = 0  # the full collections this object ran
        self.thaws = 0  # the collections that unfroze everything first
        self.longest_s = 0.0  # the longest full collection seen while installed
        self.freezes = 0  # full collections whose survivors were frozen since the last thaw
        self._blocks = 0  # memory blocks in use after the last thaw (0: not measured yet)
        self._began = 0.0
        self._thawing = False

    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self) -> None:
        end_start_up()
        if self._saved is not None or not gc.isenabled():
            return
        # Imported here, not at the top: the launcher imports this module before any other
        # (hold_for_start_up), and the log's modules are start-up's to load.
        from agentsh.session.log import keep_frozen

        gen0, gen1, gen2 = gc.get_threshold()
        self._saved = (gen0, gen1, gen2)
        gc.freeze()
        keep_frozen(True)  # a log load's or the tree's promotion would thaw them
        if sys.version_info < (3, 14):
            self._due = max(1, gen2)
            gc.set_threshold(gen0, gen1, _OFF)
            self._blocks = 0  # measured at the first collection: after the agent's load
            self.freezes = 0
            gc.callbacks.append(self._observe)

    def remove(self) -> None:
        if self._saved is None:
            return
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._observe)
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()  # the next full collection looks at them again
        from agentsh.session.log import keep_frozen

        keep_frozen(False)

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        """``gc.callbacks``: after every full collection, whoever ran it, its survivors are
        frozen: the next one walks only what is made from now on."""
        if info["generation"] != 2:
            return
        if phase == "start":
            self._began = time.perf_counter()
            return
        gc.freeze()
        if self._thawing or not self._blocks:
            self._blocks = sys.getallocatedblocks()  # what lives now (a few µs)
            self.freezes = 0
        else:
            self.freezes += 1
        self.longest_s = max(self.longest_s, time.perf_counter() - self._began)

    def _thaw_due(self, quiet: float) -> bool:
        """Frozen cyclic garbage may have grown: the memory in use has grown by a share of
        what lived after the last thaw (a smaller one after a long quiet moment)."""
        if not self.freezes or not self._blocks:
            return False
        growth = THAW_QUIET_GROWTH if quiet >= THAW_QUIET_S else THAW_GROWTH
        return sys.getallocatedblocks() >= self._blocks * (1 + growth)

    def settle(self) -> bool:
        """A turn has ended (called after its last frame): collect what it made since the
        last full collection, and freeze what survives, so the next turn's collections walk
        only what that one makes. Not while keys come (the next tick does it). True if it
        ran."""
        if self._saved is None or sys.version_info >= (3, 14) or gc.get_count()[2] == 0:
            return False
        if time.monotonic() - self.last_input < QUIET_S:
            return False
        gc.collect()
        self.collections += 1
        return True

    def tick(self, *, busy: bool = False) -> bool:
        """Run a full collection if one is due and allowed now (``busy``: a turn is running,
        so the screen is painting); True if it ran. A thaw waits for an idle app."""
        if self._saved is None or sys.version_info >= (3, 14):
            return False
        pending = gc.get_count()[2]  # young collections since the last full one
        quiet = time.monotonic() - self.last_input
        idle = not busy and quiet >= QUIET_S
        if idle and self._thaw_due(quiet):
            gc.unfreeze()  # frozen garbage is found only by a collection that walks it all
            self.thaws += 1
            self._thawing = True
            try:
                gc.collect()
            finally:
                self._thawing = False
            self.collections += 1
            return True
        if pending < self._due or (not idle and pending < self._due * FORCE_AFTER):
            return False
        gc.collect()
        self.collections += 1
        return True
