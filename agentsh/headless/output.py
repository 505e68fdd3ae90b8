"""The four ``--output-format`` writers of a headless run.

``text`` prints the final answer on stdout; ``json`` prints Claude Code's result object;
``stream-json`` prints Claude Code's message lines (``system``/``init``, ``assistant``, ``user``,
``result``); ``events`` prints agentsh's own richer events, one JSON line each, and the same
result object after each turn. Every writer tells a person on stderr what they should know
while it works (retries, notices, compactions, refused tool calls; with ``--verbose`` each tool
call too), so stdout stays machine-readable or only the answer.
"""

from __future__ import annotations

import json
import threading
from typing import Any, TextIO

from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    Event,
    Notice,
    Retrying,
    ToolStarted,
    TurnOutcome,
    event_to_json,
)
from agentsh.headless.claude_code import ClaudeCodeStream, RunTotals
from agentsh.termsafe import one_line, printable

FORMATS = ("text", "json", "stream-json", "events")


class Output:
    """One format; :meth:`event` for each agent event, :meth:`end_turn` after each turn."""

    def __init__(
        self, fmt: str, stream: ClaudeCodeStream, out: TextIO, err: TextIO, *, verbose: bool
    ) -> None:
        self.fmt = fmt
        self.stream = stream
        self.out = out
        self.err = err
        self.verbose = verbose
        self._open = False  # a turn started whose result is not written yet
        # Lines are whole: the exit backstop (agentsh.headless.ending) may write the result
        # from its own thread while the main thread is stuck.
        self._lock = threading.RLock()

    @property
    def totals(self) -> RunTotals:
        return self.stream.totals

    def begin(self, init: dict[str, Any]) -> None:
        if self.fmt == "stream-json":
            self._json(init)

    def start_turn(self) -> None:
        self.stream.start_turn()
        self._open = True

    def event(self, event: Event) -> None:
        lines = self.stream.feed(event)
        if self.fmt == "stream-json":
            for line in lines:
                self._json(line)
        elif self.fmt == "events":
            self._json({**event_to_json(event), "session_id": self.stream.session_id})
        progress(event, self.err, verbose=self.verbose)

    def denied(self, summary: str, why: str) -> None:
        """A tool call refused without asking (nobody can answer in ``-p``): one line on
        stderr, in every format; the JSON formats also list it in ``permission_denials``."""
        reason = f": {why}" if why else ""
        self.err.write(f"agentsh: denied {one_line(summary)}{one_line(reason)}\n")
        self.err.flush()

    def end_turn(self, denials: list[dict[str, Any]]) -> None:
        with self._lock:
            if not self._open:
                return
            self._open = False
            self._end_turn(denials)

    def abort(self) -> None:
        """The run was ended outright in a turn (a second Ctrl+C, a signal the turn did not
        end by itself after): its result, as interrupted, if it has none yet."""
        with self._lock:
            if self._open:
                self.stream.note_interrupt()
                self.totals.outcome = TurnOutcome.ABORTED
                self.end_turn([])

    def _end_turn(self, denials: list[dict[str, Any]]) -> None:
        if self.fmt == "text":
            if self.totals.answer and not self.totals.is_error:
                self.out.write(printable(self.totals.answer.rstrip("\n")) + "\n")
                self.out.flush()
            return
        self._json(self.stream.result(denials))

    def write(self, data: dict[str, Any]) -> None:
        """A line of the stream (a control response), in the JSON formats only."""
        if self.fmt in ("stream-json", "events"):
            self._json(data)

    def _json(self, data: dict[str, Any]) -> None:
        line = json.dumps(data, ensure_ascii=False) + "\n"
        with self._lock:
            self.out.write(line)
            self.out.flush()


def progress(event: Event, err: TextIO, *, verbose: bool = False) -> None:
    """What a person watching stderr wants to know while the answer is being made."""
    match event:
        case Retrying(fallback_model=fallback) if fallback:
            failed = f"{event.model}: " if event.model else ""
            err.write(
                f"agentsh: {failed}{event.reason}; going on with {fallback} (--fallback-model)\n"
            )
        case Retrying():
            err.write(
                f"agentsh: {event.reason}; retry {event.attempt}/{event.max_attempts} "
                f"in {event.delay_s:.1f}s\n"
            )
        case Notice() if not event.limit:  # a reached limit is the run's one closing line
            err.write(f"agentsh: {event.level.value}: {one_line(event.text)}\n")
        case CompactionFinished():
            note = f"; {event.note}" if event.note else ""
            err.write(
                f"agentsh: context compacted ({event.tier.label}): {event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens{compaction_files(event)}{note}\n"
            )
        case CompactionFailed():
            err.write(f"agentsh: warning: {event.tier.label} compaction failed: {event.reason}\n")
        case ToolStarted() if verbose:
            err.write(f"agentsh: > {one_line(event.summary)}\n")
        case _:
            return
    err.flush()


def compaction_files(event: CompactionFinished) -> str:
    """The files a compaction wrote, each named for what it holds: a Summarize writes its
    summary and, first, the turns verbatim (the archive) in two files; a prune-only one wrote
    none (no "archive" with an empty path)."""
    files = ""
    if event.summary_file:
        files += f"; summary {event.summary_file}"
    if event.archive_file:
        files += f"; archive {event.archive_file}"
    return files
