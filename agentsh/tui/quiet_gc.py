"""Full garbage collections wait for a quiet keyboard, so none of them holds up a keystroke.

CPython's full (oldest-generation) collection walks every object the collector tracks. In the
TUI that is Textual, the chat's widgets and their render caches, a few hundred thousand objects:
one collection held the UI loop for 70-150 ms of CPU (most of a second on a loaded machine), and
while a reply streamed one came about twice a reply, each time a key echoed that much later.

So, while the app runs: the objects that exist when the first frame is painted (modules,
classes, the first screen; they live as long as the app) are frozen, so no collection walks
them again; automatic full collections are off; and a full collection runs when the app is idle
(no turn running, nothing typed into the editor for :data:`QUIET_S`) and as much has been
allocated as would have started one automatically, or, whatever happens, when
:data:`FORCE_AFTER` times that has. What survives an idle collection is frozen too: a 2,000-token
reply leaves ~90,000 tracked objects in the chat, and without that each reply made every later
collection longer, the forced ones in the middle of a stream included (which now walk only what
the running turn allocated). Cyclic garbage among frozen objects (a chat replaced by a session
switch) is reclaimed by a thaw: everything unfrozen and collected once, when nobody has typed for
:data:`THAW_QUIET_S` after :data:`THAW_AFTER` idle collections, or after :data:`THAW_FORCE` of
them at any idle moment (so frozen garbage stays bounded).
Young collections stay automatic: they are short. Where the collector works otherwise (CPython
3.14's incremental collector) only the first freeze applies.

Before the first frame (:func:`hold_for_start_up`, from the launcher): a young collection every
:data:`START_UP_YOUNG` allocations and no full one. Start-up makes ~55,000 objects that live as
long as the app; with CPython's thresholds the collector walked them in ~125 young collections
and a full one before the first frame (40-70 ms of its CPU) to find ~2,000 garbage objects.
"""

from __future__ import annotations

import gc
import sys
import time

QUIET_S = 1.0  # nothing typed for this long (and no turn): a full collection may run
FORCE_AFTER = 20  # ... and it runs anyway once this many times its due allocations are made
THAW_QUIET_S = 20.0  # nothing typed (and no turn) for this long: frozen garbage may be reclaimed
THAW_AFTER = 5  # ... once this many idle collections have frozen their survivors since the last
THAW_FORCE = 20  # ... and at any idle moment after this many
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
        self._freezes = 0  # idle collections whose survivors were frozen since the last thaw

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

    def remove(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()  # the next full collection looks at them again
        from agentsh.session.log import keep_frozen

        keep_frozen(False)

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def tick(self, *, busy: bool = False) -> bool:
        """Run a full collection if one is due and allowed now (``busy``: a turn is running,
        so the screen is painting); True if it ran."""
        if self._saved is None or sys.version_info >= (3, 14):
            return False
        pending = gc.get_count()[2]  # young collections since the last full one
        quiet = time.monotonic() - self.last_input
        idle = not busy and quiet >= QUIET_S
        if idle and (
            self._freezes >= THAW_FORCE or (self._freezes >= THAW_AFTER and quiet >= THAW_QUIET_S)
        ):
            gc.unfreeze()  # frozen garbage is found only by a collection that walks it all
            self.thaws += 1
            self._freezes = 0
        elif pending < self._due or (not idle and pending < self._due * FORCE_AFTER):
            return False
        gc.collect()
        self.collections += 1
        if idle:  # the survivors live on (the chat, the session): later collections skip them
            gc.freeze()
            self._freezes += 1
        return True
