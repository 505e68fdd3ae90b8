"""What a running turn is doing, read from its events, for the working indicator.

While a turn (or a ``/compact``) runs, the line above the editor says what it is doing —
starting the model client, waiting for the model, thinking, writing the reply, running
``bash: pytest -q``, waiting for an approval, retrying, compacting — with the seconds since it
started and the key that cancels it. This module is the state only (no Textual): the turn
feeds it every event, the widget (:class:`agentsh.tui.widgets.activity_line.ActivityLine`)
draws :meth:`Activity.line` on a timer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from agentsh.events import (
    ApprovalRequest,
    AssistantMessage,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    Event,
    ModelClientReady,
    ModelClientStarting,
    Retrying,
    TextDelta,
    ThinkingDelta,
    Tier,
    ToolCallDelta,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from agentsh.termsafe import one_line

WAITING = "waiting for the model"
STARTING = "starting the model client"  # the model worker still imports litellm
COMPACTING = "compacting"
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Activity:
    """The running work's current step and start time (``None`` when idle)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.started: float | None = None
        self.doing = ""
        self._turn = False  # a turn (the model is asked after a compaction), not a /compact
        # The backoff being waited out (a 429's Retry-After, a 5xx's backoff) and when it
        # ends: the line counts down to the next attempt rather than showing the wait once.
        self._retry: Retrying | None = None
        self._retry_at = 0.0

    @property
    def running(self) -> bool:
        return self.started is not None

    def start(self, doing: str = WAITING) -> None:
        """Work began (a message was sent, or ``/compact``); the clock starts now."""
        self.started = self._clock()
        self.doing = doing
        self._turn = False

    def stop(self) -> None:
        self.started = None
        self.doing = ""

    def follow(self, event: Event) -> None:
        """Follow the turn: each event that changes what it is doing updates :attr:`doing`."""
        doing = _doing(event)
        if isinstance(event, TurnStarted):
            self._turn = True
        elif isinstance(event, CompactionFinished | CompactionFailed) and not self._turn:
            doing = None  # a /compact: nothing waits for the model after it, it ends
        if doing is not None or isinstance(event, TurnEnded):
            self._retry = None
        if isinstance(event, Retrying) and not event.fallback_model:
            self._retry, self._retry_at = event, self._clock() + event.delay_s
        if isinstance(event, TurnEnded):
            self.stop()
        elif doing is not None:
            if self.started is None:
                self.start(doing)
            if isinstance(event, ApprovalRequest):
                before = self.doing
                event.decision.add_done_callback(lambda _: self._answered(doing, before))
            self.doing = doing

    def _answered(self, asking: str, before: str) -> None:
        """The user answered an approval: the step it interrupted (``running bash: ...``)
        shows again. No event comes between the answer and the call's output, so "waiting
        for your answer" stayed up for as long as the approved command ran."""
        if self.doing == asking:
            self.doing = before

    def elapsed(self) -> float:
        return 0.0 if self.started is None else max(0.0, self._clock() - self.started)

    def line(self, cancel_key: str = "Esc") -> str:
        """``"⠙ running bash: pytest -q · 12s · Esc to cancel"`` ("" when idle)."""
        if self.started is None:
            return ""
        elapsed = self.elapsed()
        frame = SPINNER[int(elapsed * 8) % len(SPINNER)]
        doing = self._countdown() or self.doing
        return f"{frame} {doing} · {human_seconds(elapsed)} · {cancel_key} to cancel"

    def _countdown(self) -> str:
        """``"retry 1/3 in 4s (rate limited (429))"`` while a retry's wait runs (the first of
        3 retries), ``"retry 1/3 (...)"`` once it is over and the retry is on its way ("" if
        no retry)."""
        retry = self._retry
        if retry is None:
            return ""
        left = math.ceil(self._retry_at - self._clock())
        when = f" in {human_seconds(left)}" if left > 0 else ""
        return f"retry {retry.attempt}/{retry.max_attempts}{when} ({retry.reason})"

    def compact(self, cancel_key: str = "Esc") -> str:
        """``"⠙ working · 12s · Esc to cancel"`` for the status bar ("" when idle)."""
        if self.started is None:
            return ""
        elapsed = self.elapsed()
        frame = SPINNER[int(elapsed * 8) % len(SPINNER)]
        return f"{frame} working · {human_seconds(elapsed)} · {cancel_key} to cancel"


def human_seconds(seconds: float) -> str:
    """``7s``, ``1m 05s``, ``1h 02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _doing(event: Event) -> str | None:
    """The step an event starts, or None when it changes nothing."""
    match event:
        case TurnStarted():
            return WAITING
        case ThinkingDelta():
            return "thinking"
        case TextDelta():
            return "writing the reply"
        case ToolCallDelta(name=name) if name:
            return f"writing a {name} call"
        case AssistantMessage(tool_calls=calls) if calls:
            return f"about to run {calls[0][1]}"
        case ToolStarted(summary=summary, name=name):
            return f"running {_one_line(summary or name)}"
        case ModelClientStarting():
            return STARTING
        case ToolFinished() | CompactionFinished() | CompactionFailed() | ModelClientReady():
            return WAITING
        case ApprovalRequest(summary=summary):
            return f"waiting for your answer: {_one_line(summary)}"
        case Retrying(fallback_model=fallback, model=model, reason=reason) if fallback:
            return f"{model or 'the model'} {reason}: switching to {fallback}"
        case Retrying(attempt=attempt, max_attempts=most, delay_s=delay, reason=reason):
            return f"retry {attempt}/{most} in {delay:.0f}s ({reason})"
        case CompactionStarted(tier=tier):
            return f"{COMPACTING} ({Tier.label_of(tier)})"
    return None


def _one_line(text: str, limit: int = 60) -> str:
    first = one_line(text).strip()  # a line break in a path shows as \n, as in the prompt
    return first if len(first) <= limit else first[: limit - 1] + "…"
