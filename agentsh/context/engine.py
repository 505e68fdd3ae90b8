"""The context policy as a pluggable engine: what is sent, and how the context shrinks.

:class:`ContextEngine` is the seam (``ingest``, ``assemble``, ``compact``): the config chooses
the engine by name. ``tiered`` (the default) runs SPEC §4's pipeline at the 80/85/95 % tiers:
prune tool output without a model call (and stop there when that is enough), cut at a turn
boundary, summarize (Summarize) or archive (MoveToWorkspace, Truncate), repair tool pairs on
assembly. ``pi`` proves the seam: it compacts only at window minus reserve, keeps the newest
20,000 tokens and writes a six-section summary.

Every compaction writes before it forgets: the workspace file is written and fsynced, then the
``compaction`` entry is appended and synced, and only then does the context change. A failure
at either step leaves every turn where it was and is reported; a failed summary call falls back
to archiving the same turns verbatim, so no turn is ever lost.

The agent loop never talks to an engine directly: :mod:`agentsh.context.manager` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agentsh.config import ContextSettings
from agentsh.context import tiers
from agentsh.context.accounting import Accounting
from agentsh.context.convert import to_messages
from agentsh.context.cut import Cut, choose_cut, choose_cut_by_tokens
from agentsh.context.preflight import (
    budget_for,
)
from agentsh.context.prune import PruneResult, prune
from agentsh.context.repair import Message
from agentsh.context.summary import (
    PI,
    TIERED,
    SummaryDoc,
    Template,
    accept_summary,
    files_touched,
    fill_code_sections,
    fit_transcript,
    merge_files,
    serialize,
    step_lines,
    summary_request,
)
from agentsh.context.view import ContextEntry, ContextView, last_user_text, turn_starts
from agentsh.context.workspace import (
    DiskWorkspace,
    Workspace,
    WorkspaceError,
    render_archive,
    render_summary_file,
)
from agentsh.events import (
    Tier,
)
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry
from agentsh.session.log import SessionError
from agentsh.session.session import Session

Summarize = Callable[[list[dict[str, Any]], int], Awaitable[str]]

# Characters of transcript per token of summary-model window we dare send (conservative: code
# and JSON run nearer 3 characters a token than 4).
_TRANSCRIPT_CHARS_PER_TOKEN = 3
_POINTER_STEPS_CHARS = 400
_PROVISIONAL = "(provisional)"


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    """What one compaction attempt did; ``entry`` is None when the context did not change."""

    tier: Tier  # the tier applied (a failed summary reports MoveToWorkspace)
    entry: CompactionEntry | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    workspace_file: str = ""
    note: str = ""
    error: str = ""  # why nothing changed, when something went wrong

    @property
    def saved_fraction(self) -> float:
        if self.entry is None or self.tokens_before <= 0:
            return 0.0
        return max(0.0, (self.tokens_before - self.tokens_after) / self.tokens_before)


@dataclass(frozen=True, slots=True)
class TierPreview:
    """What compacting at ``tier`` would do right now (no model call, nothing written)."""

    tier: Tier
    keep_turns: int
    kept_entries: int
    removed_entries: int
    kept_tokens: int
    frees_tokens: int  # estimate; a summary's own size is estimated too
    prune_only: bool
    note: str = ""


# -- the engine seam ---------------------------------------------------------------------------


class ContextEngine(Protocol):
    """A context policy: what is sent, and how the context shrinks."""

    name: str

    def ingest(self, entry: AnyEntry) -> None:
        """An entry was appended to the session (engines may index it)."""
        ...

    def assemble(self, system_prompt: str) -> list[Message]:
        """The messages of the next request (repaired: no orphan tool call or result)."""
        ...

    def auto_tier(self, used: int, window: int) -> Tier:
        """The tier automatic compaction should run at for this usage (NONE: do nothing)."""
        ...

    async def compact(
        self, tier: Tier, *, used_before: int, manual: bool, forced: bool
    ) -> CompactionOutcome:
        """Shrink the context at ``tier``; writes before it forgets."""
        ...

    def preview(self, tier: Tier, used_before: int) -> TierPreview: ...


@dataclass(slots=True)
class EngineDeps:
    """What an engine works with; shared with the manager, which owns the model facts."""

    session: Session
    settings: ContextSettings
    accounting: Accounting
    workspace: Workspace
    summarize: Summarize
    window: int
    on_file_written: Callable[[Path], None] | None = None
    files_written: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Plan:
    """A compaction before it is written."""

    tier: Tier
    cut: Cut | None  # None: prune only
    pruned: PruneResult | None
    view: ContextView  # with the pruning applied
    tokens: list[int]  # parallel to view.entries, pruning applied

    @property
    def previous(self) -> CompactionEntry | None:
        """The compaction in force now (the view's own is a provisional copy when pruned)."""
        return (
            self.view.compaction
            if self.view.compaction and self.view.compaction.id != _PROVISIONAL
            else None
        )


class TieredEngine:
    """SPEC §4's default policy (see the module docstring)."""

    name = "tiered"
    template: Template = TIERED
    prunes = True

    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps

    # -- the protocol ---------------------------------------------------------------------------

    def ingest(self, entry: AnyEntry) -> None:
        # The accounting follows the session's leaf by itself; touching the view keeps each
        # append's cost on the append.
        self.deps.accounting.view()

    def assemble(self, system_prompt: str) -> list[Message]:
        return to_messages(self.deps.accounting.view(), system_prompt)

    def auto_tier(self, used: int, window: int) -> Tier:
        return tiers.tier_for(used / window if window else 0.0, self.deps.settings)

    def preview(self, tier: Tier, used_before: int) -> TierPreview:
        plan = self._plan(tier, used_before=used_before, may_stop_at_prune=False)
        acc = self.deps.accounting
        rule = tiers.rule(tier, self.deps.settings)
        before = acc.messages_tokens()
        if plan.cut is None:
            after = acc.summary_tokens(plan.view.summary) + sum(plan.tokens)
            return TierPreview(
                tier,
                rule.keep_turns,
                len(plan.view.entries),
                0,
                sum(plan.tokens),
                max(0, before - after),
                prune_only=True,
                note=(
                    "nothing to cut: only pruning applies"
                    if plan.pruned is not None and plan.pruned.changed
                    else self._nothing_to_free(plan)
                ),
            )
        kept = plan.cut.kept_tokens
        summary_guess = self._summary_guess(tier, plan)
        return TierPreview(
            tier,
            rule.keep_turns,
            len(plan.view.entries) - plan.cut.index,
            plan.cut.index,
            kept,
            max(0, before - kept - summary_guess),
            prune_only=False,
            note="splits the newest turn" if plan.cut.split_turn else "",
        )

    async def compact(
        self, tier: Tier, *, used_before: int, manual: bool, forced: bool
    ) -> CompactionOutcome:
        deps = self.deps
        acc = deps.accounting
        plan = self._plan(tier, used_before=used_before, may_stop_at_prune=not (manual or forced))
        messages_before = acc.messages_tokens()
        previous = plan.previous

        def after_tokens(summary: str, kept: int) -> int:
            after_messages = acc.summary_tokens(summary) + kept
            if used_before >= messages_before:
                return used_before - (messages_before - after_messages)
            # The provider counts fewer tokens than our estimate of the messages alone: scale
            # what stays to its measure, rather than subtract past zero ("18k -> 0 tokens").
            return round(after_messages * used_before / max(1, messages_before))

        if plan.cut is None:
            if plan.pruned is None or not plan.pruned.changed:
                return CompactionOutcome(
                    tier,
                    tokens_before=used_before,
                    note=self._nothing_to_free(plan),
                )
            return self._commit_prune_only(plan, used_before, after_tokens, manual)

        cut = plan.cut
        removed = plan.view.entries[: cut.index]
        kept_entries = plan.view.entries[cut.index :]
        files_read, files_modified = merge_files(
            previous.files_read if previous else (),
            previous.files_modified if previous else (),
            *files_touched(removed),
        )
        newest = last_user_text(plan.view.entries)
        previous_doc = SummaryDoc.parse(plan.view.summary, self.template)
        if not newest:
            newest = previous_doc.sections.get("Active Task", "")

        note = ""
        applied = tier
        summary_text: str | None = None
        if tier is Tier.SUMMARIZE:
            summary_text, failure = await self._model_summary(
                removed,
                plan.view.summary,
                newest,
                cut.split_turn,
                files_read,
                files_modified,
                previous_doc,
            )
            if summary_text is None:
                applied = Tier.MOVE_TO_WORKSPACE
                note = f"summary failed ({failure}); the turns were archived instead"

        if summary_text is not None:
            kind = "summary"
            file_text = render_summary_file(
                summary_text, session_id=deps.session.id, tier_label=applied.label
            )
        else:
            kind = "archive"
            file_text = render_archive(
                removed,
                session_id=deps.session.id,
                tier_label=applied.label,
                note=f"{len(removed)} entries; their text is reproduced verbatim below.",
            )
        try:
            where = deps.workspace.write(kind, file_text)
        except WorkspaceError as exc:
            return CompactionOutcome(applied, tokens_before=used_before, error=str(exc))

        if summary_text is None:
            doc = previous_doc
            doc.pointers.append(self._pointer(applied, where, removed, cut))
            if doc.structured or cut.split_turn:
                fill_code_sections(
                    doc,
                    self.template,
                    active_task=newest,
                    files_read=files_read,
                    files_modified=files_modified,
                )
            summary_text = doc.render(self.template)

        kept_ids = {e.id for e in kept_entries}
        kept_calls = {
            c.id for e in kept_entries if isinstance(e, MessageEntry) for c in e.tool_calls
        }
        # Carry forward the pruning still relevant to what is kept (phase 1's result already
        # includes the previous compaction's).
        pruned = plan.pruned
        all_replacements = pruned.replacements if pruned else plan.view.replacements
        all_arguments = pruned.argument_replacements if pruned else plan.view.argument_replacements
        replacements = {k: v for k, v in all_replacements.items() if k in kept_ids}
        arguments = {k: v for k, v in all_arguments.items() if k in kept_calls}
        after = after_tokens(summary_text, cut.kept_tokens)
        entry = CompactionEntry(
            id=deps.session.new_id(),
            parent_id=deps.session.leaf_id,
            tier=applied.value,
            summary=summary_text,
            first_kept_id=cut.first_kept_id,
            tokens_before=used_before,
            tokens_after=after,
            workspace_file=where,
            files_read=files_read,
            files_modified=files_modified,
            replacements=replacements,
            argument_replacements=arguments,
            manual=manual,
        )
        error = self._append(entry)
        if error:
            self._discard(where)
            return CompactionOutcome(applied, tokens_before=used_before, error=error)
        self._announce(where)
        return CompactionOutcome(applied, entry, used_before, after, where, note)

    # -- planning -------------------------------------------------------------------------------

    def _plan(self, tier: Tier, *, used_before: int, may_stop_at_prune: bool) -> _Plan:
        acc = self.deps.accounting
        settings = self.deps.settings
        view = acc.view()
        rule = tiers.rule(tier, settings)
        pruned: PruneResult | None = None
        work_view = view
        if self.prunes:
            begins = turn_starts(view.entries)
            old_before = begins[-rule.keep_turns] if len(begins) > rule.keep_turns else 0
            pruned = prune(view, old_before, settings, acc.count)
            if pruned.changed:
                work_view = _with_pruning(view, pruned)
        tokens = [acc.entry_tokens(e, work_view) for e in work_view.entries]
        if pruned is not None and pruned.changed and may_stop_at_prune:
            # Stop at pruning when that alone takes the context out of every tier: a prune
            # that leaves it in a tier would only make the next call compact again.
            entries_before = acc.messages_tokens() - acc.summary_tokens(view.summary)
            if self._out_of_tiers(used_before - (entries_before - sum(tokens))):
                return _Plan(tier, None, pruned, work_view, tokens)
        cut = self._choose_cut(work_view, tokens, rule)
        return _Plan(tier, cut, pruned, work_view, tokens)

    def _nothing_to_free(self, plan: _Plan) -> str:
        turns = len(turn_starts(plan.view.entries))
        keep = tiers.rule(plan.tier, self.deps.settings).keep_turns
        if self.name == "tiered" and 1 < turns <= keep:
            return (
                f"nothing to free: the context holds {turns} turns and {plan.tier.label} keeps "
                f"the last {keep}"
            )
        return "nothing to free: what is left is the newest turn, which must stay"

    def _out_of_tiers(self, used: int) -> bool:
        window = self.deps.window
        return window > 0 and used / window < self.deps.settings.move_to_workspace_at

    def _choose_cut(
        self, view: ContextView, tokens: Sequence[int], rule: tiers.TierRule
    ) -> Cut | None:
        return choose_cut(view.entries, tokens, rule.keep_turns, rule.max_kept_tokens)

    def _summary_guess(self, tier: Tier, plan: _Plan) -> int:
        acc = self.deps.accounting
        if tier is Tier.SUMMARIZE:
            return (
                acc.summary_tokens(plan.view.summary) + self.deps.settings.summary_max_tokens // 2
            )
        return acc.summary_tokens(plan.view.summary) + 60

    # -- phase 3 --------------------------------------------------------------------------------

    async def _model_summary(
        self,
        removed: Sequence[ContextEntry],
        previous: str,
        newest: str,
        split_turn: bool,
        files_read: Sequence[str],
        files_modified: Sequence[str],
        previous_doc: SummaryDoc,
    ) -> tuple[str | None, str]:
        settings = self.deps.settings
        max_tokens = settings.summary_max_tokens
        room = max(4_000, self.deps.window - max_tokens - 4_000)
        transcript = fit_transcript(serialize(removed), room * _TRANSCRIPT_CHARS_PER_TOKEN)
        request = summary_request(
            transcript,
            self.template,
            previous=previous,
            newest_request=newest,
            split_turn=split_turn,
            max_tokens=max_tokens,
        )
        try:
            text = await self.deps.summarize(request, max_tokens)
        except Exception as exc:  # noqa: BLE001 - any failure of the injected model falls back
            return None, _describe(exc)
        doc = accept_summary(text or "", self.template)
        if doc is None:
            return None, "the model's reply was empty or not a structured summary"
        doc.pointers = list(previous_doc.pointers)
        for heading, _ in self.template.model_sections:
            doc.sections.setdefault(heading, "(none)")
        fill_code_sections(
            doc,
            self.template,
            active_task=newest,
            files_read=files_read,
            files_modified=files_modified,
        )
        return doc.render(self.template), ""

    # -- writing ----------------------------------------------------------------------------

    def _pointer(self, tier: Tier, where: str, removed: Sequence[ContextEntry], cut: Cut) -> str:
        turns = len(turn_starts(removed))
        what = f"{turns} earlier turn{'s' if turns != 1 else ''}"
        if cut.split_turn:
            steps = "; ".join(step_lines(removed[cut.prefix_start :]))
            if len(steps) > _POINTER_STEPS_CHARS:
                steps = steps[: _POINTER_STEPS_CHARS - 3] + "..."
            what += f" and the first steps of the current turn ({steps})" if steps else ""
        if tier is Tier.TRUNCATE:
            return (
                f"- {what} were dropped from the context in an emergency truncation; they are "
                f"archived verbatim in `{where}` (read it if you need them)."
            )
        return f"- {what} were moved verbatim to `{where}`; read that file if you need them."

    def _commit_prune_only(
        self,
        plan: _Plan,
        used_before: int,
        after_tokens: Callable[[str, int], int],
        manual: bool,
    ) -> CompactionOutcome:
        deps = self.deps
        pruned = plan.pruned
        assert pruned is not None
        previous = plan.previous
        if previous is not None:
            first_kept = previous.first_kept_id
        else:
            path = deps.session.tree.path_ids()
            first_kept = path[0]
        entry = CompactionEntry(
            id=deps.session.new_id(),
            parent_id=deps.session.leaf_id,
            tier=plan.tier.value,
            summary=plan.view.summary,
            first_kept_id=first_kept,
            tokens_before=used_before,
            tokens_after=after_tokens(plan.view.summary, sum(plan.tokens)),
            workspace_file=previous.workspace_file if previous else "",
            files_read=previous.files_read if previous else (),
            files_modified=previous.files_modified if previous else (),
            replacements=pruned.replacements,
            argument_replacements=pruned.argument_replacements,
            manual=manual,
        )
        error = self._append(entry)
        if error:
            return CompactionOutcome(plan.tier, tokens_before=used_before, error=error)
        parts = [
            f"{pruned.stubbed} old tool outputs shortened" if pruned.stubbed else "",
            f"{pruned.deduplicated} duplicates removed" if pruned.deduplicated else "",
            f"{pruned.shortened_calls} long tool arguments shortened"
            if pruned.shortened_calls
            else "",
        ]
        note = "pruned tool output only (no model call): " + ", ".join(p for p in parts if p)
        return CompactionOutcome(plan.tier, entry, used_before, entry.tokens_after, "", note)

    def _append(self, entry: CompactionEntry) -> str:
        """Append and sync the record; the reason on failure ("" when it is durable)."""
        session = self.deps.session
        try:
            session.append(entry)
            session.sync()
        except (SessionError, OSError) as exc:
            return f"the compaction could not be recorded in the session log: {exc}"
        finally:
            self.deps.accounting.invalidate()
        return ""

    def _discard(self, where: str) -> None:
        # The record never made it to the log, so its file describes nothing: remove it so the
        # summaries pane does not list a compaction that did not happen.
        if isinstance(self.deps.workspace, DiskWorkspace):
            with contextlib.suppress(OSError):
                Path(where).unlink()

    def _announce(self, where: str) -> None:
        self.deps.files_written.append(where)
        callback = self.deps.on_file_written
        if callback is not None and isinstance(self.deps.workspace, DiskWorkspace):
            callback(Path(where))


class PiEngine(TieredEngine):
    """Pi-style: compact only at window minus reserve, keep the newest N tokens, no pruning,
    a six-section summary."""

    name = "pi"
    template = PI
    prunes = False

    def auto_tier(self, used: int, window: int) -> Tier:
        budget = budget_for(window, self.deps.settings.reserve_tokens)
        return Tier.SUMMARIZE if used > budget else Tier.NONE

    def _choose_cut(
        self, view: ContextView, tokens: Sequence[int], rule: tiers.TierRule
    ) -> Cut | None:
        return choose_cut_by_tokens(view.entries, tokens, self.deps.settings.pi_keep_recent_tokens)


ENGINES: dict[str, type[TieredEngine]] = {"tiered": TieredEngine, "pi": PiEngine}


def make_engine(name: str, deps: EngineDeps) -> ContextEngine:
    try:
        return ENGINES[name](deps)
    except KeyError:
        known = ", ".join(ENGINES)
        raise ValueError(f"unknown context engine {name!r}; choose one of {known}") from None


def _with_pruning(view: ContextView, pruned: PruneResult) -> ContextView:
    """A copy of ``view`` whose compaction carries the new pruning (not written anywhere)."""
    base = view.compaction or CompactionEntry(
        id=_PROVISIONAL,
        parent_id=None,
        tier="",
        summary="",
        first_kept_id="",
        tokens_before=0,
        tokens_after=0,
    )
    provisional = replace(
        base,
        replacements=pruned.replacements,
        argument_replacements=pruned.argument_replacements,
    )
    return replace(view, compaction=provisional, entries=list(view.entries))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__
