"""The context policy as a pluggable engine: what is sent, and how the context shrinks.

:class:`ContextEngine` (:mod:`.engine_protocol`) is the seam (``ingest``, ``assemble``, ``plan``,
``compact``): the config chooses the engine by name. ``tiered`` (the default) runs SPEC §4's
pipeline at the 80/85/95 % tiers: prune tool output without a model call (and stop there when
that is enough), cut at a turn boundary, summarize (Summarize) or archive (MoveToWorkspace,
Truncate), repair tool pairs on assembly. ``pi`` proves the seam: it compacts only at window
minus reserve, keeps the newest 20,000 tokens and writes a six-section summary.

A compaction is planned first (:class:`Plan`: what would leave, what it would free, or why
nothing can; :mod:`agentsh.context.planning`), so the manager can decline a plan that frees
nothing without starting anything.
Every compaction writes before it forgets: the workspace file is written and fsynced, then the
``compaction`` entry is appended and synced, and only then does the context change. A failure
at either step leaves every turn where it was and is reported; a failed summary call falls back
to archiving the same turns verbatim, so no turn is ever lost; a compaction that would leave the
context no smaller is not applied. Whatever tier runs, the facts of :mod:`agentsh.context.facts`
are rewritten by code.

The agent loop never talks to an engine directly: :mod:`agentsh.context.manager` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from agentsh.context import facts, tiers
from agentsh.context.convert import to_messages
from agentsh.context.cut import Cut, choose_cut_by_tokens
from agentsh.context.engine_protocol import (
    CompactionOutcome,
    ContextEngine,
    EngineDeps,
    Plan,
    SummaryReply,
)
from agentsh.context.planning import TieredPlanner
from agentsh.context.preflight import budget_for
from agentsh.context.prune import PruneResult
from agentsh.context.repair import Message
from agentsh.context.summary import (
    PI,
    TIERED,
    SummaryDoc,
    Template,
    accept_summary,
    fitted_summary_request,
    serialize,
    step_lines,
)
from agentsh.context.view import ContextEntry, ContextView
from agentsh.context.workspace import (
    WorkspaceError,
    render_archive,
    render_summary_file,
)
from agentsh.events import Tier
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry
from agentsh.session.log import SessionError
from agentsh.termsafe import one_line
from agentsh.values import Usage

# Characters of transcript per token of summary-model window we dare send (conservative: code
# and JSON run nearer 3 characters a token than 4).
_POINTER_STEPS_CHARS = 400
# How far past its max_tokens a summary may run, counted by our tokenizer (the provider's may
# count a little fewer), before it is refused as over its budget.
_SUMMARY_SLACK = 1.25


class TieredEngine(TieredPlanner):
    """SPEC §4's default policy (see the module docstring); its plans are
    :class:`~agentsh.context.planning.TieredPlanner`'s."""

    template: Template = TIERED

    # -- the protocol ---------------------------------------------------------------------------

    def ingest(self, entry: AnyEntry) -> None:
        # The accounting follows the session's leaf by itself; touching the view keeps each
        # append's cost on the append.
        self.deps.accounting.view()

    def assemble(self, system_prompt: str) -> list[Message]:
        return to_messages(self.deps.accounting.view(), system_prompt)

    async def compact(
        self, plan: Plan, *, used_before: int, manual: bool, instructions: str = ""
    ) -> CompactionOutcome:
        deps = self.deps
        if not plan.changes:
            return CompactionOutcome(plan.tier, tokens_before=used_before, note=plan.blocker)
        entries = plan.view.entries
        previous = plan.previous
        previous_doc = SummaryDoc.parse(plan.view.summary, self.template)
        root = deps.session.header.cwd
        path = deps.session.current_path()
        if plan.cut is None:
            known = facts.gather(
                path=path,
                entries=entries,
                previous=previous,
                previous_doc=previous_doc,
                pending=None,
                root=root,
                window=deps.window,
            )
            known.apply(previous_doc, self.template)
            return self._commit(
                plan, used_before, manual, previous_doc.render(self.template), known, "", ""
            )

        cut = plan.cut
        removed = entries[: cut.index]
        known = facts.gather(
            path=path,
            entries=entries,
            previous=previous,
            previous_doc=previous_doc,
            pending=None,
            root=root,
            kept_from=cut.index,
            window=deps.window,
        )
        note = plan.note
        applied = plan.tier
        doc: SummaryDoc | None = None
        if plan.tier is Tier.SUMMARIZE:
            doc, failure = await self._model_summary(
                removed, plan.view.summary, known.request, cut.split_turn, instructions
            )
            if doc is None:
                applied = Tier.MOVE_TO_WORKSPACE
                note = f"summary failed ({failure}); the turns were archived instead"
            elif not self._frees_enough(doc, known, cut, used_before):
                # A verbose model: applying it would free (next to) nothing, a strike; and as
                # "not applied", in -p the same paid call came again at the next turn.
                doc, applied = None, Tier.MOVE_TO_WORKSPACE
                least = deps.settings.strike_min_saving
                note = f"the summary would free under {least:.0%}; the turns were archived instead"
        summarized = doc is not None
        if doc is None:
            doc = previous_doc
        known.apply(doc, self.template)
        # Write before forget, whatever the summary model left out: the turns verbatim first,
        # then (Summarize) the summary, which names them.
        archive = ""
        try:
            archive = deps.workspace.write(
                "archive",
                render_archive(
                    removed,
                    session_id=deps.session.id,
                    tier_label=applied.label,
                    note=f"{len(removed)} entries; their text is reproduced verbatim below.",
                ),
            )
            where = archive
            if known.request_id in {e.id for e in removed} and not archive.startswith("memory:"):
                # The request's own message just left: its copy names the file holding it.
                known = replace(known, request_archive=archive)
                known.apply(doc, self.template)
            if summarized:
                where = deps.workspace.write(
                    "summary",
                    render_summary_file(
                        doc.render(self.template),
                        session_id=deps.session.id,
                        tier_label=applied.label,
                        archive=facts.file_name(archive),
                    ),
                )
        except WorkspaceError as exc:
            if archive:
                deps.workspace.discard(archive)
            return CompactionOutcome(applied, tokens_before=used_before, error=str(exc))
        verbatim = archive if summarized else ""
        pending = facts.Pending(cut.first_kept_id, where, summarized, verbatim)
        archived = facts.render_archived(facts.archived_spans(path, pending))
        steps = self._split_steps(removed, cut) if not summarized else ""
        doc.pointers = [p for p in (archived, steps) if p]
        outcome = self._commit(
            replace(plan, tier=applied),
            used_before,
            manual,
            doc.render(self.template),
            known,
            where,
            note,
            verbatim,
        )
        if outcome.entry is None:
            for written in {where, archive}:
                deps.workspace.discard(written)
        else:
            self._announce(where)
        return outcome

    async def _summary_fit(self) -> tuple[int, int]:
        """The window the summary request must fit and the reply's length: the summary
        model's own, when it is another model (a smaller one was sent the session's share)."""
        window, output = self.deps.window, 0
        if self.deps.summary_limits is not None:
            limits = await asyncio.to_thread(self.deps.summary_limits, window)
            window, output = limits.window, limits.max_output
        max_tokens = self.summary_max_tokens(window)
        return window, min(max_tokens, output) if output else max_tokens

    def _frees_enough(self, doc: SummaryDoc, known: facts.Facts, cut: Cut, used: int) -> bool:
        """Whether ``doc`` (with the facts written in) beside the kept turns frees at least
        ``strike_min_saving`` of the context: less would be a strike, where archiving the same
        turns frees what the plan counted."""
        trial = SummaryDoc(dict(doc.sections), list(doc.pointers))
        known.apply(trial, self.template)
        acc = self.deps.accounting
        after = acc.summary_tokens(trial.render(self.template)) + cut.kept_tokens
        freed = acc.messages_tokens() - after
        return freed > 0 and freed >= self.deps.settings.strike_min_saving * used

    # -- phase 3 --------------------------------------------------------------------------------

    async def _model_summary(
        self,
        removed: Sequence[ContextEntry],
        previous: str,
        newest: str,
        split_turn: bool,
        instructions: str,
    ) -> tuple[SummaryDoc | None, str]:
        settings = self.deps.settings
        window, max_tokens = await self._summary_fit()
        steer = "\n\n".join(t.strip() for t in (settings.summary_instructions, instructions) if t)
        request = fitted_summary_request(
            serialize(removed),
            self.template,
            window=window,
            count=self.deps.accounting.count,
            max_tokens=max_tokens,
            previous=previous,
            newest_request=newest,
            split_turn=split_turn,
            instructions=steer,
        )
        if request is None:
            return None, "the summary request would not fit the window"
        limit = settings.summary_timeout_s
        try:
            # Bounded as a whole: a model that hangs was retried as a network error, each try
            # waiting model.request_timeout_s (600 s), and the turn waited for all of it.
            reply = await asyncio.wait_for(self.deps.summarize(request, max_tokens), limit)
        except TimeoutError:
            return None, f"the summary model did not answer within {limit:g} s"
        except Exception as exc:  # noqa: BLE001 - any failure of the injected model falls back
            return None, _describe(exc)
        if isinstance(reply, SummaryReply):
            self._add_side_usage(reply.usage)
            if reply.cut_off:
                # Its last sections are missing, and filling them with "(none)" would tell the
                # model nothing was left to do: the turns are archived verbatim instead.
                return (
                    None,
                    f"the summary was cut off at the model's output limit ({max_tokens:,} tokens)",
                )
            called, reply = reply.tools_called, reply.text
        else:
            called = ()
        length = self.deps.accounting.count(reply or "")
        if length > max_tokens * _SUMMARY_SLACK:
            # A model (or a proxy) that ignores max_tokens: kept, a 20k-token summary on a 32k
            # window stayed in every later context, even a Truncate's, and each compaction
            # after it freed next to nothing. The turns are archived verbatim instead.
            return None, (
                f"the summary ran to {length:,} tokens, over its budget of {max_tokens:,}"
            )
        doc = accept_summary(reply or "", self.template)
        if doc is None:
            return None, _not_a_summary(reply or "", called)
        orders = _orders_in(doc.render(self.template))
        if orders:
            # The summary goes to the model as a user-role message: an order a tool output or a
            # web page carried, copied into it, would read as the user's. The turns themselves
            # (their outputs fenced by the guard when they came in) are archived instead.
            return None, f"the summary carried orders to the model ({orders})"
        for heading, _ in self.template.model_sections:
            doc.sections.setdefault(heading, "(none)")
        return doc, ""

    def _add_side_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.deps.side_usage = add_usage(self.deps.side_usage, usage)

    # -- writing ----------------------------------------------------------------------------

    def _split_steps(self, removed: Sequence[ContextEntry], cut: Cut) -> str:
        """One line naming what the archived first steps of a split turn did."""
        if not cut.split_turn:
            return ""
        steps = "; ".join(step_lines(removed[cut.prefix_start :]))
        if len(steps) > _POINTER_STEPS_CHARS:
            steps = steps[: _POINTER_STEPS_CHARS - 3] + "..."
        return f"- the first steps of the current turn were archived too: {steps}" if steps else ""

    def _commit(
        self,
        plan: Plan,
        used_before: int,
        manual: bool,
        summary: str,
        known: facts.Facts,
        where: str,
        note: str,
        archive: str = "",
    ) -> CompactionOutcome:
        """Append the record unless it would leave the context no smaller."""
        deps = self.deps
        acc = deps.accounting
        cut = plan.cut
        previous = plan.previous
        kept_entries = plan.view.entries[cut.index :] if cut else plan.view.entries
        kept_tokens = cut.kept_tokens if cut else sum(plan.tokens)
        messages_before = acc.messages_tokens()
        after_messages = acc.summary_tokens(summary) + kept_tokens
        if after_messages >= messages_before:
            return CompactionOutcome(
                plan.tier,
                tokens_before=used_before,
                note=(
                    f"not applied: it would leave the context no smaller ({messages_before:,} "
                    f"-> {after_messages:,} tokens of conversation)"
                ),
            )
        if used_before >= messages_before:
            after = used_before - (messages_before - after_messages)
        else:
            # The provider counts fewer tokens than our estimate of the messages alone: scale
            # what stays to its measure, rather than subtract past zero ("18k -> 0 tokens").
            after = round(after_messages * used_before / max(1, messages_before))
        after = self.sent_after(after, after_messages, kept_entries, plan.view)
        kept_ids = {e.id for e in kept_entries}
        kept_calls = {
            c.id for e in kept_entries if isinstance(e, MessageEntry) for c in e.tool_calls
        }
        # Carry forward the pruning still relevant to what is kept (phase 1's result already
        # includes the previous compaction's).
        pruned = plan.pruned
        all_replacements = pruned.replacements if pruned else plan.view.replacements
        all_arguments = pruned.argument_replacements if pruned else plan.view.argument_replacements
        if cut is not None:
            first_kept = cut.first_kept_id
        elif previous is not None:
            first_kept = previous.first_kept_id
        else:
            first_kept = deps.session.tree.path_ids()[0]
        entry = CompactionEntry(
            id=deps.session.new_id(),
            parent_id=deps.session.leaf_id,
            tier=plan.tier.value,
            summary=summary,
            first_kept_id=first_kept,
            tokens_before=used_before,
            tokens_after=after,
            workspace_file=where or (previous.workspace_file if previous else ""),
            files_read=known.files_read,
            files_modified=known.files_modified,
            replacements={k: v for k, v in all_replacements.items() if k in kept_ids},
            argument_replacements={k: v for k, v in all_arguments.items() if k in kept_calls},
            manual=manual,
            usage=deps.side_usage,
            paused="" if manual else deps.paused,
            archive_file=archive,
        )
        error = self._append(entry)
        if error:
            return CompactionOutcome(plan.tier, tokens_before=used_before, error=error)
        deps.side_usage = None
        if cut is None and pruned is not None:
            note = "pruned tool output only (no model call): " + _prune_note(pruned)
        return CompactionOutcome(
            plan.tier, entry, used_before, after, where, note, archive_file=archive or where
        )

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

    def _announce(self, where: str) -> None:
        self.deps.files_written.append(where)
        callback = self.deps.on_file_written
        if callback is not None and not where.startswith("memory:"):
            callback(Path(where))


class PiEngine(TieredEngine):
    """Pi-style: compact only at window minus reserve, keep the newest N tokens, no pruning,
    a six-section summary."""

    name = "pi"
    template = PI
    prunes = False

    def auto_tier(self, used: int, window: int) -> Tier:
        # Pi's own rule: window minus the configured reserve (at most half the window).
        budget = budget_for(window, min(self.deps.settings.reserve_tokens, window // 2))
        return Tier.SUMMARIZE if used > budget else Tier.NONE

    def _choose_cut(
        self, view: ContextView, tokens: Sequence[int], rule: tiers.TierRule, fixed: int
    ) -> Cut | None:
        return choose_cut_by_tokens(view.entries, tokens, self.deps.settings.pi_keep_recent_tokens)


ENGINES: dict[str, type[TieredEngine]] = {"tiered": TieredEngine, "pi": PiEngine}


def make_engine(name: str, deps: EngineDeps) -> ContextEngine:
    try:
        return ENGINES[name](deps)
    except KeyError:
        known = ", ".join(ENGINES)
        raise ValueError(f"unknown context engine {name!r}; choose one of {known}") from None


def add_usage(total: Usage | None, usage: Usage) -> Usage:
    if total is None:
        return usage
    return Usage(
        total.input_tokens + usage.input_tokens,
        total.output_tokens + usage.output_tokens,
        total.cache_read_tokens + usage.cache_read_tokens,
        total.cache_write_tokens + usage.cache_write_tokens,
        total.cost + usage.cost,
    )


def _prune_note(pruned: PruneResult) -> str:
    parts = [
        f"{pruned.stubbed} old tool outputs shortened" if pruned.stubbed else "",
        f"{pruned.deduplicated} duplicates removed" if pruned.deduplicated else "",
        f"{pruned.shortened_calls} long tool arguments shortened" if pruned.shortened_calls else "",
    ]
    return ", ".join(p for p in parts if p)


def _not_a_summary(reply: str, called: Sequence[str] = ()) -> str:
    """Why a reply is no summary, with its start quoted (a refusal, a reply to the user), or
    the tools it called (it went on with the conversation instead)."""
    if called and not reply.strip():
        names = one_line(", ".join(dict.fromkeys(called)))[:80]
        return f"the model called a tool ({names}) instead of writing the summary"
    flat = " ".join(reply.split())
    if not flat:
        return "the model's reply was empty"
    shown = one_line(flat if len(flat) <= 60 else flat[:59] + "…")
    return f"the model's reply was not a summary: “{shown}”"


def _orders_in(text: str) -> str:
    """The injection guard's findings in a model-written summary ("" when clean): the patterns
    that are orders to the model, as in tool output (a summary names commands and paths)."""
    from agentsh.memory.guard import DEFAULT_MAX_SCAN_BYTES, Scope, scan

    whole = max(DEFAULT_MAX_SCAN_BYTES, len(text.encode("utf-8")))  # a long one is no threat
    return ", ".join(sorted({t.name for t in scan(text, Scope.TOOL_OUTPUT, max_bytes=whole)}))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__
