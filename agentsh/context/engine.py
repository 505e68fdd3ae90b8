"""The context policy as a pluggable engine, and the facade the agent loop calls.

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

:class:`ContextManager` is the one object the agent loop talks to: ``prepare`` before every
model call (status, automatic compaction, the pre-flight route, the bounded-buffer guard),
``on_overflow`` after a provider's context-overflow error, ``compact`` for ``/compact``,
``status`` for the status bar and ``breakdown`` for ``agentsh context``. Anti-thrashing lives
here: a compaction that frees under 10 % is a strike, and two strikes in a row pause automatic
compaction until the user compacts by hand or the context shrinks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agentsh.config import ContextSettings, Settings
from agentsh.context import tiers
from agentsh.context.accounting import Accounting, Counter, Used
from agentsh.context.convert import to_messages
from agentsh.context.cut import Cut, choose_cut, choose_cut_by_tokens
from agentsh.context.preflight import (
    Preflight,
    Route,
    budget_for,
    cap_messages,
    choose_route,
    reducible_tokens,
    result_cap_chars,
    truncate_tool_results,
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
    MemoryWorkspace,
    Workspace,
    WorkspaceError,
    render_archive,
    render_summary_file,
)
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextStatus,
    Event,
    Notice,
    NoticeLevel,
    StatusChanged,
    Tier,
)
from agentsh.llm.tokens import estimate_tokens
from agentsh.paths import UserPaths
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, Role
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


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """``agentsh context``: where the tokens of the current context go."""

    model: str
    window: int
    engine: str
    system: int
    tools: int
    memory: int
    summary: int
    messages: int  # user and assistant messages (tool-call arguments included)
    tool_results: int
    estimated_total: int
    used: int
    estimated: bool
    pct: float
    tier: Tier
    entries: int
    turns: int
    compactions: int
    paused: bool
    problem: str
    previews: tuple[TierPreview, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "previews"}
        data["tier"] = self.tier.value
        data["previews"] = [
            {**{k: getattr(p, k) for k in p.__dataclass_fields__}, "tier": p.tier.value}
            for p in self.previews
        ]
        return data


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


# -- the facade ----------------------------------------------------------------------------------


class ContextManager:
    """Everything the agent loop needs from context management, in one object."""

    def __init__(
        self,
        session: Session,
        settings: Settings,
        user: UserPaths,
        *,
        model: str,
        window: int,
        summarize: Summarize,
        count_tokens: Counter | None = None,
        emit: Callable[[Event], None] = lambda e: None,
        on_summary_written: Callable[[Path], None] | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        self.session = session
        self.settings = settings
        self.user = user
        self.model = model
        self.window = window
        self.emit = emit
        cs = settings.context
        count = count_tokens or (lambda text: estimate_tokens(text, cs.chars_per_token))
        self.accounting = Accounting(session, count)
        if workspace is None:
            workspace = (
                DiskWorkspace(user.session_workspace(session.id))
                if session.persistent
                else MemoryWorkspace()
            )
        self.workspace = workspace
        self.deps = EngineDeps(
            session=session,
            settings=cs,
            accounting=self.accounting,
            workspace=workspace,
            summarize=summarize,
            window=window,
            on_file_written=on_summary_written,
        )
        self.engine: ContextEngine = make_engine(cs.engine, self.deps)
        self.problem = ""
        self.last_preflight: Preflight | None = None
        self.last_truncated = 0  # tool results truncated in the last request
        self.last_dropped = 0  # messages the bounded-buffer guard left out of the last request
        self._system_tokens = 0
        self._tools_tokens = 0
        self._failed_turn: str | None = None
        self._force_truncate = False
        self._memory_flushed = False
        self._strikes, self._paused_at = self._strikes_from_log()

    # -- status ---------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    @property
    def strikes(self) -> int:
        return self._strikes

    def note_prompt(self, system_prompt: str, tools: Sequence[dict[str, Any]]) -> None:
        """Tell the accounting the current system prompt and tool schemas (``prepare`` does it;
        call it once at start so the first status counts them too)."""
        self._system_tokens = self.accounting.count_text(system_prompt)
        self._tools_tokens = self.accounting.count_tools(tools)

    def _used(self) -> Used:
        return self.accounting.used(self._system_tokens, self._tools_tokens)

    def status(self) -> ContextStatus:
        used = self._used()
        self._maybe_resume(used.tokens)
        totals = self.accounting.totals()
        branch = self.accounting.branch_position()
        window = self.window
        pct = round(100.0 * used.tokens / window, 1) if window else 0.0
        return ContextStatus(
            model=self.model,
            window=window,
            used=used.tokens,
            pct=pct,
            tier=self.engine.auto_tier(used.tokens, window) if window else Tier.NONE,
            estimated=used.estimated,
            session_input_tokens=totals.input_tokens,
            session_output_tokens=totals.output_tokens,
            session_cost=totals.cost,
            compactions=self.accounting.view().compactions_on_path,
            paused=self.paused,
            branch_index=branch.index,
            branch_count=branch.count,
            problem=self.problem,
        )

    def record_usage(self, entry: MessageEntry) -> None:
        """An assistant entry with usage was appended: its usage anchors the count."""
        self.engine.ingest(entry)
        self._maybe_resume(self._used().tokens)

    def set_model(self, model: str, window: int) -> None:
        self.model = model
        self.window = window
        self.deps.window = window

    # -- before every model call -----------------------------------------------------------------

    async def prepare(
        self,
        system_prompt: str,
        tools: list[dict[str, Any]],
        pending_input: str = "",
        *,
        compact: bool = True,
    ) -> list[Message]:
        """Compact if a tier applies, run the pre-flight check, and return the messages to send.

        ``pending_input`` is text about to be sent that is not in the session yet; it counts in
        the estimate only (the agent normally appends the user message first). ``compact=False``
        sends the context as it is, trimmed but never compacted: the pre-compaction memory save
        must see the turns a compaction is about to take away.
        """
        cs = self.settings.context
        self.note_prompt(system_prompt, tools)
        if self.window <= 0:  # an unknown window: nothing to measure against
            messages, self.last_dropped = cap_messages(
                self.engine.assemble(system_prompt), cs.max_messages
            )
            return messages
        used = self._used()
        self._maybe_resume(used.tokens)
        compacted_at: Tier | None = None
        tier = self.engine.auto_tier(used.tokens, self.window)
        if compact and tier is not Tier.NONE and self._may_compact_automatically():
            pct = 100.0 * used.tokens / self.window
            done = await self._run(
                tier, manual=False, forced=False, reason=f"context at {pct:.0f}%"
            )
            if done is not None:
                compacted_at = tier

        messages = self.engine.assemble(system_prompt)
        cap = result_cap_chars(self.window, cs)
        check = self._preflight(messages, pending_input, cap)
        self.last_preflight = check
        must_compact = check.route in (Route.COMPACT_ONLY, Route.COMPACT_THEN_TRUNCATE)
        if compact and must_compact and self._may_compact_automatically():
            current = self.engine.auto_tier(self._used().tokens, self.window)
            target = (
                tiers.next_tier(compacted_at)
                if compacted_at is not None
                else max(current, Tier.MOVE_TO_WORKSPACE, key=tiers.severity)
            )
            done = await self._run(
                target,
                manual=False,
                forced=True,
                reason="pre-flight: the next request would not fit the window",
            )
            if done is not None:
                messages = self.engine.assemble(system_prompt)
                check = self._preflight(messages, pending_input, cap)
        self.last_truncated = 0
        if check.route is not Route.FITS or self._force_truncate:
            messages, self.last_truncated = truncate_tool_results(messages, cap)
            if compact:  # a side request (the memory save) leaves the flag for the real one
                self._force_truncate = False
        messages, self.last_dropped = cap_messages(messages, cs.max_messages)
        self.emit(StatusChanged(self.status()))
        return messages

    def _preflight(self, messages: Sequence[Message], pending: str, cap: int) -> Preflight:
        cs = self.settings.context
        used = self._used()
        pending_tokens = self.accounting.count(pending) if pending else 0
        exact, estimated = used.base, used.tokens - used.base + pending_tokens
        need = exact + int(estimated * cs.safety_margin)
        budget = budget_for(self.window, cs.reserve_tokens)
        reducible = int(reducible_tokens(messages, cap, self.accounting.count) * cs.safety_margin)
        return Preflight(choose_route(need, budget, reducible), need, budget, reducible)

    # -- compaction -------------------------------------------------------------------------------

    async def compact(
        self, tier: Tier | None = None, *, manual: bool = True
    ) -> CompactionEntry | None:
        """Compact now (``/compact``, ``agentsh compact``); the tier defaults to the one the
        context is in, else Summarize. A manual compaction resets anti-thrashing."""
        if tier is None or tier is Tier.NONE:
            current = self.engine.auto_tier(self._used().tokens, self.window)
            tier = current if current is not Tier.NONE else Tier.SUMMARIZE
        if manual:
            self._strikes = 0
            self._paused_at = None
        return await self._run(tier, manual=manual, forced=True, reason="requested")

    async def on_overflow(self) -> bool:
        """The provider said the request was too long: compact at the next tier (or truncate
        oversized tool results next time). False when nothing could be freed."""
        current = self.engine.auto_tier(self._used().tokens, self.window)
        tier = tiers.next_tier(current)
        entry = await self._run(
            tier, manual=False, forced=True, reason="the provider said the context is too long"
        )
        if entry is not None:
            return True
        messages = self.engine.assemble("")
        cap = result_cap_chars(self.window, self.settings.context)
        if reducible_tokens(messages, cap, self.accounting.count) > 0:
            self._force_truncate = True
            return True
        return False

    def needs_memory_flush(self) -> bool:
        """True when the next ``prepare`` is about to summarize and the (opt-in) pre-compaction
        memory save has not run yet: the agent may give the model one turn with the memory tool,
        then call :meth:`mark_memory_flushed`."""
        if not self.settings.context.pre_compaction_memory_save or self._memory_flushed:
            return False
        if not self._may_compact_automatically():
            return False
        return self.engine.auto_tier(self._used().tokens, self.window) is Tier.SUMMARIZE

    def mark_memory_flushed(self) -> None:
        self._memory_flushed = True

    async def _run(
        self, tier: Tier, *, manual: bool, forced: bool, reason: str
    ) -> CompactionEntry | None:
        used = self._used()
        self.emit(CompactionStarted(tier, reason))
        outcome = await self.engine.compact(
            tier, used_before=used.tokens, manual=manual, forced=forced
        )
        if outcome.entry is None:
            if outcome.error:
                # Nothing left the context; say why and try again at the next turn.
                self.problem = f"compaction failed: {outcome.error}"
                self._failed_turn = self._turn_key()
            elif not manual:
                self._strike(used.tokens)  # a compaction that frees nothing is a strike too
            self.emit(CompactionFailed(outcome.tier, outcome.error or outcome.note))
            self.emit(StatusChanged(self.status()))
            return None
        self.problem = ""
        self._failed_turn = None
        self._memory_flushed = False
        if not manual:
            if outcome.saved_fraction < self.settings.context.strike_min_saving:
                self._strike(outcome.tokens_after)
            else:
                self._strikes = 0
        self.emit(
            CompactionFinished(
                entry_id=outcome.entry.id,
                tier=outcome.tier,
                tokens_before=outcome.tokens_before,
                tokens_after=outcome.tokens_after,
                workspace_file=outcome.workspace_file,
                note=outcome.note,
            )
        )
        self.emit(StatusChanged(self.status()))
        return outcome.entry

    # -- anti-thrashing and retries ----------------------------------------------------------------

    def _strike(self, used_after: int) -> None:
        self._strikes += 1
        limit = self.settings.context.strikes_to_pause
        if self._strikes >= limit and self._paused_at is None:
            self._paused_at = max(1, used_after)
            self.emit(
                Notice(
                    NoticeLevel.WARNING,
                    f"Automatic compaction is paused: {limit} compactions in a row freed under "
                    f"{self.settings.context.strike_min_saving:.0%} of the context. Compact by "
                    "hand (/compact) to go on; it resumes by itself when the context shrinks.",
                )
            )

    def _maybe_resume(self, used: int) -> None:
        if self._paused_at is None:
            return
        shrunk = used < self._paused_at * (1 - self.settings.context.strike_min_saving)
        if shrunk or self.engine.auto_tier(used, self.window) is Tier.NONE:
            self._paused_at = None
            self._strikes = 0

    def _may_compact_automatically(self) -> bool:
        if self.paused:
            return False
        # After a failed write, try again at the next turn, not before every call of this one.
        return self._failed_turn is None or self._failed_turn != self._turn_key()

    def _turn_key(self) -> str:
        entries = self.accounting.view().entries
        for entry in reversed(entries):
            if isinstance(entry, MessageEntry) and entry.role is Role.USER:
                return entry.id
        return ""

    def _strikes_from_log(self) -> tuple[int, int | None]:
        """Rebuild anti-thrashing state from the compactions on the path (it survives a resume)."""
        cs = self.settings.context
        strikes = 0
        paused_at: int | None = None
        for entry in self.session.current_path():
            if not isinstance(entry, CompactionEntry):
                continue
            if entry.manual:
                strikes, paused_at = 0, None
                continue
            before = max(1, entry.tokens_before)
            if (entry.tokens_before - entry.tokens_after) / before < cs.strike_min_saving:
                strikes += 1
                if strikes >= cs.strikes_to_pause and paused_at is None:
                    paused_at = max(1, entry.tokens_after)
            else:
                strikes, paused_at = 0, None
        return strikes, paused_at

    # -- agentsh context ---------------------------------------------------------------------------

    def breakdown(
        self, system_prompt: str, tools: list[dict[str, Any]], memory: str = ""
    ) -> ContextBreakdown:
        """Per-part token counts of the current context and what each tier would do now.
        ``memory`` is the memory part of the system prompt, counted apart when given."""
        self.note_prompt(system_prompt, tools)
        acc = self.accounting
        view = acc.view()
        tokens = acc.tokens_by_entry()
        memory_tokens = acc.count(memory) if memory and memory in system_prompt else 0
        system_tokens = max(0, self._system_tokens - memory_tokens)
        tool_results = sum(
            t for e, t in zip(view.entries, tokens, strict=True) if e.TYPE == "toolResult"
        )
        messages = sum(tokens) - tool_results
        summary = acc.summary_tokens(view.summary)
        used = self._used()
        previews = tuple(self.engine.preview(tier, used.tokens) for tier in tiers.ORDER[1:])
        status = self.status()
        return ContextBreakdown(
            model=self.model,
            window=self.window,
            engine=self.engine.name,
            system=system_tokens,
            tools=self._tools_tokens,
            memory=memory_tokens,
            summary=summary,
            messages=messages,
            tool_results=tool_results,
            estimated_total=self._system_tokens + self._tools_tokens + summary + sum(tokens),
            used=used.tokens,
            estimated=used.estimated,
            pct=status.pct,
            tier=status.tier,
            entries=len(view.entries),
            turns=len(turn_starts(view.entries)),
            compactions=view.compactions_on_path,
            paused=self.paused,
            problem=status.problem,
            previews=previews,
        )
