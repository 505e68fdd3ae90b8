"""The Summaries pane of the side panel: every compaction on the session's current path.

One row per compaction, newest first: its tier, when it ran, the context before and after, how
many turns it took out of the model's context, and the files it tracked. Enter reads the summary
(or, for the archiving tiers, the workspace archive) as markdown in a
:class:`~agentsh.tui.screens.read_view.ReadView`; ``g`` jumps the chat to the first entry the
compaction kept (mounting it if the chat's window had dropped it, and highlighting it); ``e``
shows the archived turns again in the chat, in place and marked as not in the model's context,
and hides them again. The log is append-only, so nothing a compaction did is lost: ``/compact
undo`` restores the context from before the newest one as a new leaf.

The pane is handed a :class:`~agentsh.tui.pane_host.PaneHost` (the session, the agent, the
environment), and the side panel calls :meth:`SummariesPane.refresh_content` when the path
changes (a turn, a compaction, an undo, a branch or session switch).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agentsh.events import Tier
from agentsh.session.entries import AnyEntry, CompactionEntry, MessageEntry, Role
from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.projection import compaction_spans
from agentsh.tui.status_format import human_tokens

if TYPE_CHECKING:
    from agentsh.session.session import Session
    from agentsh.tui.pane_host import PaneHost
    from agentsh.tui.widgets.chat import ChatView

ARCHIVE_TIERS = frozenset({Tier.MOVE_TO_WORKSPACE.value, Tier.TRUNCATE.value})


@dataclass(frozen=True, slots=True)
class CompactionView:
    """One compaction on the path, as the pane lists it."""

    number: int  # 1 is the oldest on the path
    entry: CompactionEntry
    archived_entries: int  # entries it took out of the model's context
    archived_turns: int

    @property
    def tier_label(self) -> str:
        return Tier.label_of(self.entry.tier)

    @property
    def prune_only(self) -> bool:
        return self.archived_entries == 0


def compaction_views(path: list[AnyEntry]) -> list[CompactionView]:
    """The compactions on ``path``, newest first."""
    views = []
    for number, span in enumerate(compaction_spans(path), start=1):
        covered = path[span.start : span.end]
        turns = sum(1 for e in covered if isinstance(e, MessageEntry) and e.role is Role.USER)
        views.append(CompactionView(number, span.entry, span.archived, turns))
    views.reverse()
    return views


def local_time(timestamp: str) -> str:
    """``2026-11-29 14:03`` in local time, from the log's ISO UTC timestamp."""
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return timestamp
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def row_content(view: CompactionView) -> Content:
    entry = view.entry
    manual = " (manual)" if entry.manual else ""
    saved = ""
    if entry.tokens_before > 0:
        change = round(100 * (entry.tokens_after - entry.tokens_before) / entry.tokens_before)
        saved = f" ({change:+d}%)"
    if view.prune_only:
        archived = "tool output pruned only"
    elif view.archived_turns:
        s = "s" if view.archived_turns != 1 else ""
        archived = f"{view.archived_turns} turn{s} archived"
    else:
        archived = f"{view.archived_entries} entries archived"
    parts: list[str | tuple[str, str]] = [
        (f"#{view.number} {view.tier_label}{manual}", "bold"),
        (f"  {local_time(entry.timestamp)}", "$text-muted"),
        "\n  ",
        (f"{human_tokens(entry.tokens_before)} → {human_tokens(entry.tokens_after)}", "$accent"),
        f" tokens{saved}",
        "\n  ",
        (archived, "$text-muted"),
    ]
    if entry.files_read or entry.files_modified:
        parts += [
            "\n  ",
            (f"files: {len(entry.files_read)} read, {len(entry.files_modified)} modified", ""),
        ]
    return Content.assemble(*parts)


def read_body(
    view: CompactionView, archive_text: str | None, where: str, archive_where: str = ""
) -> str:
    """The read view of one compaction: its facts, then the summary or the archive. ``where``
    is its workspace file (a Summarize's summary, else its archive), ``archive_where`` a
    Summarize's archive of the turns verbatim; a prune-only compaction wrote no file (its
    record carries the previous one's)."""
    entry = view.entry
    lines = [
        f"**Tier** {view.tier_label}{' (manual)' if entry.manual else ''} · "
        f"**When** {local_time(entry.timestamp)} · "
        f"**Context** {entry.tokens_before:,} → {entry.tokens_after:,} tokens",
        "",
    ]
    if view.prune_only:
        lines.append("Only tool output was pruned; every turn stayed in the context.")
    else:
        lines.append(
            f"**Archived** {view.archived_turns} turn(s), {view.archived_entries} entries; "
            "they stay in the session (press `e` in the pane to show them in the chat)."
        )
    archive = entry.tier in ARCHIVE_TIERS
    if view.prune_only:
        where = archive_where = ""
    elif archive:
        where, archive_where = "", where
    if where:
        lines += ["", f"**Summary file** `{where}`"]
    if archive_where:
        lines += ["", f"**Archive file** (the turns verbatim) `{archive_where}`"]
    # The log keeps each list oldest first (by last touch); shown newest first, modified files
    # before read ones, as everywhere else files are listed (the facts in the context).
    for label, files in (("modified", entry.files_modified), ("read", entry.files_read)):
        if files:
            newest = ", ".join(f"`{f}`" for f in reversed(files))
            lines += ["", f"**Files {label} (newest first)** {newest}"]
    lines += ["", "---", ""]
    if entry.summary.strip() and not (archive and archive_text):
        lines.append(entry.summary.strip())
    if archive:
        if archive_text is not None:
            lines.append(archive_text.strip() or "_the archive file is empty_")
        elif entry.workspace_file and not view.prune_only:
            lines.append(
                "_The archive file could not be read. The archived turns are still in the "
                "session: press `e` in the pane to show them in the chat._"
            )
    if not entry.summary.strip() and not archive:
        lines.append("_No summary: this compaction only pruned tool output._")
    return "\n".join(lines)


class SummariesPane(Widget):
    """The compactions on the current path, newest first."""

    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.SUMMARIES_PANE)
    DEFAULT_CSS = """
    SummariesPane { height: 1fr; layout: vertical; }
    SummariesPane #summaries-head { padding: 0 1; color: $text-muted; height: auto; }
    SummariesPane #summaries-list { height: 1fr; border: none; padding: 0; }
    SummariesPane #summaries-list:focus { border: none; }
    SummariesPane #summaries-keys { padding: 0 1; color: $text-muted; height: auto; }
    """

    def __init__(
        self, host: PaneHost, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.host = host
        self.views: list[CompactionView] = []
        self.refreshes = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="summaries-head")
        yield OptionList(id="summaries-list")
        yield Static(
            Content("enter read · g jump to kept · e show archived · /compact undo"),
            id="summaries-keys",
        )

    def on_mount(self) -> None:
        self.refresh_content()

    def focus_target(self) -> None:
        self.query_one("#summaries-list", OptionList).focus()

    # -- where things are ---------------------------------------------------------------------

    def _session(self) -> Session | None:
        return self.host.current_session()

    def _chat(self) -> ChatView | None:
        from agentsh.tui.widgets.chat import ChatView

        found = self.app.query(ChatView)
        return found.first() if found else None

    # -- refreshing ---------------------------------------------------------------------------

    def refresh_content(self) -> None:
        """Re-read the compactions on the current path (cheap: one walk of the path)."""
        session = self._session()
        path = session.current_path() if session is not None else []
        self.views = compaction_views(path)
        listing = self.query_one("#summaries-list", OptionList)
        keep = listing.highlighted_option.id if listing.highlighted_option is not None else None
        listing.clear_options()
        listing.add_options(Option(row_content(v), id=v.entry.id) for v in self.views)
        head = self.query_one("#summaries-head", Static)
        count = len(self.views)
        if not count:
            head.update(
                Content(
                    "No compaction on this branch yet. They happen as the context fills "
                    "(80 % and up), or now with /compact."
                )
            )
        else:
            s = "s" if count != 1 else ""
            head.update(Content(f"{count} compaction{s} on this branch, newest first"))
        self.query_one("#summaries-keys", Static).display = bool(self.views)
        if self.views:
            ids = [v.entry.id for v in self.views]
            listing.highlighted = ids.index(keep) if keep in ids else 0
        self.refreshes += 1

    def highlighted(self) -> CompactionView | None:
        listing = self.query_one("#summaries-list", OptionList)
        option = listing.highlighted_option
        if option is None:
            return None
        return next((v for v in self.views if v.entry.id == option.id), None)

    # -- reading ------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#summaries-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        view = next((v for v in self.views if v.entry.id == event.option.id), None)
        if view is not None:
            self.open(view)

    def open(self, view: CompactionView) -> None:
        from agentsh.tui.screens.read_view import ReadView

        where = self._display_where(view.entry.workspace_file)
        archive = (
            self._read_workspace(view.entry.workspace_file)
            if view.entry.tier in ARCHIVE_TIERS and not view.prune_only
            else None
        )
        entry = view.entry
        title = f"Compaction #{view.number} · {view.tier_label}"
        subtitle = (
            f"{human_tokens(entry.tokens_before)} → {human_tokens(entry.tokens_after)} tokens · "
            + ("summary" if entry.tier not in ARCHIVE_TIERS else "archive")
        )
        body = read_body(view, archive, where, self._display_where(view.entry.archive_file))
        self.app.push_screen(ReadView(title, body, subtitle=subtitle))

    def _read_workspace(self, where: str) -> str | None:
        """The archive file, through the agent's workspace (a ``--no-session`` run keeps it in
        memory), else from disk."""
        if not where:
            return None
        agent = self.host.agent
        if agent is not None:
            return agent.read_archive(where)
        try:
            return Path(where).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _display_where(self, where: str) -> str:
        if not where:
            return ""
        env = self.host.env
        path = Path(where)
        if path.is_absolute():
            try:
                return "workspace:" + path.relative_to(env.user.workspace_dir).as_posix()
            except ValueError:
                pass
        return path.name

    # -- acting on the chat -------------------------------------------------------------------

    async def action_jump(self) -> None:
        """Scroll the chat to the first entry the highlighted compaction kept."""
        view = self.highlighted()
        chat = self._chat()
        session = self._session()
        if view is None or chat is None or session is None:
            return
        order = {entry.id: index for index, entry in enumerate(session.current_path())}
        widget = await chat.reveal_entry(view.entry.first_kept_id, order)
        if widget is None:
            self.notify("The first kept entry is not shown in the chat.", severity="warning")
            return
        self._uncover_chat()

    async def action_toggle_archived(self) -> None:
        """Show (or hide) the turns the highlighted compaction archived, in the chat."""
        view = self.highlighted()
        chat = self._chat()
        if view is None or chat is None:
            return
        if view.prune_only or not chat.has_archive(view.entry.id):
            self.notify(
                "This compaction archived no turns (it only pruned tool output).",
                severity="information",
            )
            return
        shown = await chat.toggle_archive(view.entry.id)
        if shown:
            session = self._session()
            path = session.current_path() if session is not None else []
            spans = [s for s in compaction_spans(path) if s.entry.id == view.entry.id]
            if spans and spans[0].archived:
                first = path[spans[0].start].id
                order = {entry.id: index for index, entry in enumerate(path)}
                await chat.reveal_entry(first, order, highlight=False)
            self._uncover_chat()

    def _uncover_chat(self) -> None:
        """On a narrow terminal the panel covers the chat: close it so the jump shows (the
        editor takes the focus, as when the pane key closes the panel)."""
        from agentsh.tui.panes.panel import SidePanel
        from agentsh.tui.widgets.composer import PromptInput

        for ancestor in self.ancestors:
            if isinstance(ancestor, SidePanel):
                if ancestor.overlays_chat:
                    ancestor.hide()
                    self.app.query_one(PromptInput).focus()
                return
