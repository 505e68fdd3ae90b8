"""Anti-thrashing: when automatic compaction cannot keep up, it pauses instead of looping.

Automatic compaction has not kept up when

- a compaction freed under ``strike_min_saving`` (10 %) of the context: a *strike*;
  ``strikes_to_pause`` strikes in a row pause it; or
- the context reaches a tier again before a whole turn has passed since an automatic
  compaction (in the rest of its turn or in the next one): the turns are larger than what
  compaction frees, and every turn would compact again. That pauses it at once, instead of a
  second compaction, so no two turns in a row compact automatically.

While paused no tier runs by itself; the pre-flight check still compacts a request that would
not fit (those compactions keep the pause, and say so in their record). It holds until the user
compacts by hand, switches to a path without what paused it (a branch switch, ``/compact
undo``) or to another model's window. The state is a pure function of the compaction records
and the provider figures on the session path (with the messages after the newest figure counted
as the decision to compact counts them), so every ``agentsh -p -c`` process reads the same
state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentsh.config import ContextSettings
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, Role

InTier = Callable[[int], bool]
Count = Callable[[AnyEntry], int]  # an entry's tokens as sent (0: not sent)


class Pause:
    """The anti-thrashing state of one context (see the module docstring)."""

    def __init__(self, settings: ContextSettings) -> None:
        self.settings = settings
        self.strikes = 0
        self.paused_at: int | None = None  # the context size it paused at
        self.reason = ""  # why it paused, for the notice
        self.watching = False  # within a turn of an automatic compaction
        self._turns = 0  # user messages since it
        self.told = False  # a tier was reached while paused (and said to be held back)

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    def reset(self) -> None:
        """A manual compaction or another window: automatic compaction resumes."""
        self.strikes, self.paused_at, self.reason = 0, None, ""
        self.watching, self._turns, self.told = False, 0, False

    def strike(self, used_after: int) -> bool:
        """A compaction that freed under the minimum; True when that paused it just now."""
        self.strikes += 1
        if self.strikes >= self.settings.strikes_to_pause and self.paused_at is None:
            self.paused_at = max(1, used_after)
            self.reason = (
                f"{self.strikes} compactions in a row freed under "
                f"{self.settings.strike_min_saving:.0%} of the context"
            )
            return True
        return False

    def engage(self, used: int) -> None:
        """The context reached a tier while :attr:`watching`: compaction cannot keep up."""
        self.paused_at, self.watching, self.told = max(1, used), False, True
        self.reason = (
            "the context was back in a tier within a turn of the last compaction (turns this "
            "large fill what compaction frees)"
        )

    def turn_started(self) -> None:
        """A user message: the watch ends at the second one after the compaction."""
        self._turns += 1
        if self._turns >= 2:
            self.watching = False

    def replay(self, path: Sequence[AnyEntry], in_tier: InTier, count: Count) -> bool:
        """Rebuild the state from ``path``; True when it is paused and was not before."""
        was = self.paused
        self.reset()
        used = 0  # the context as the decision before each request measured it
        decided = False  # the request after the compaction was decided before it
        for entry in path:
            if isinstance(entry, CompactionEntry):
                # The decision made before it (it runs in a ``prepare``, after the check).
                if not entry.manual and used and in_tier(used):
                    if self.paused:
                        self.told = True
                    elif self.watching and decided:
                        self.engage(used)
                self._record(entry)
                used, decided = entry.tokens_after, False
            elif not self.watching and (self.told or not self.paused):
                continue
            elif (
                isinstance(entry, MessageEntry)
                and entry.usage
                and entry.usage.context_tokens
                and not entry.usage.estimated
            ):
                if self.paused and in_tier(used):
                    self.told = True  # a tier reached while paused was said then
                elif decided and in_tier(used):
                    self.engage(used)
                used, decided = entry.usage.context_tokens, True
            else:
                used += count(entry)
                if isinstance(entry, MessageEntry) and entry.role is Role.USER:
                    self.turn_started()
        return self.paused and not was

    def _record(self, entry: CompactionEntry) -> None:
        if entry.manual:
            self.reset()
            return
        if self.paused_at is not None:
            return  # the pre-flight net (or a provider overflow) compacted: the pause holds
        if entry.paused:
            # Made while paused: the turns that paused it may be cut now, and counted as this
            # context sends them they no longer reach a tier. The record says it held.
            self.paused_at, self.reason = max(1, entry.tokens_after), entry.paused
            self.watching, self.told = False, True
            return
        before = max(1, entry.tokens_before)
        if (entry.tokens_before - entry.tokens_after) / before < self.settings.strike_min_saving:
            self.strike(entry.tokens_after)
        else:
            self.strikes = 0
        self.watching, self._turns = not self.paused, 0

    def notice(self) -> str:
        return (
            f"Automatic compaction is paused: {self.reason}. Compact by hand (/compact) to go "
            "on; a branch switch or /compact undo past what paused it resumes it too. A "
            "request that would not fit is still compacted first."
        )
