"""The Memory pane of the side panel: curated memory, typed docs and hybrid search, live.

It shows what agentsh remembers and what the model is actually given. MEMORY.md and USER.md are
listed with a fill bar (characters against the limit, coloured as the file fills) and their
entries. The system prompt keeps the snapshot taken when the session started (SPEC §5), so an
entry the file gained since is marked ``+``, one it lost ``−`` and one that was rewritten ``~``:
the model sees the snapshot until the next session. Entries the injection guard keeps out of
the prompt are marked blocked. Typed docs follow, grouped by type. The search box runs the
hybrid search of the memory index in a thread worker and lists each result with its score, its
keyword and vector parts and ``path:lines`` (or says the search is keyword-only). Enter opens the
highlighted file, entry, doc or result in a :class:`~agentsh.tui.screens.read_view.ReadView`.

Live: once the pane is mounted (never before the first frame: the index loads numpy and the
embedding model lazily) a :class:`~agentsh.memory.watch.MemoryWatcher` follows the memory
folders with watchfiles; a file changed on disk is reindexed and the pane re-reads everything
within about a second. The watcher stops when the pane is unmounted (the app exiting).

The pane is handed a :class:`~agentsh.tui.pane_host.PaneHost`, through which it finds the
environment and the session's snapshot (the agent's
:meth:`~agentsh.frontend.InteractiveAPI.memory_snapshot`); the side panel calls
:meth:`MemoryPane.refresh_content` when the session changes. What it shows is computed by
:mod:`.memory_model` in a thread; this module only draws it.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from agentsh.memory.curated import (
    ENTRY_SEPARATOR,
    CuratedMemory,
    MemorySnapshot,
    MemoryTarget,
    parse_entries,
)
from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.panes.memory_model import (
    CuratedView,
    DocGroups,
    EntryStatus,
    EntryView,
    MemoryModel,
    build_model,
)

if TYPE_CHECKING:
    from agentsh.config import Environment
    from agentsh.events import IndexUpdated
    from agentsh.memory.index import MemoryIndex
    from agentsh.memory.ranking import SearchResponse, SearchResult
    from agentsh.memory.watch import MemoryWatcher
    from agentsh.tui.pane_host import PaneHost

log = logging.getLogger(__name__)

PREVIEW_CHARS = 90  # an entry's one-line preview in the list
BAR_WIDTH = 10


_MARKS = {
    EntryStatus.SAME: ("  ", ""),
    EntryStatus.ADDED: ("+ ", "bold $success"),
    EntryStatus.REMOVED: ("− ", "bold $error"),
    EntryStatus.CHANGED: ("~ ", "bold $warning"),
}


# -- rendering helpers ----------------------------------------------------------------------------


def fill_style(fill: float) -> str:
    """Green while there is room, yellow past 70 %, red past 90 % (and over the limit)."""
    if fill >= 0.9:
        return "$error"
    if fill >= 0.7:
        return "$warning"
    return "$success"


def fill_bar(chars: int, limit: int, width: int = BAR_WIDTH) -> Content:
    """``████░░░░░░ 42% 924/2,200``, coloured by fill."""
    fill = chars / limit if limit > 0 else 0.0
    filled = min(width, round(fill * width))
    return Content.assemble(
        ("█" * filled, fill_style(fill)),
        ("░" * (width - filled), "$text-muted"),
        f" {round(100 * fill)}% {chars:,}/{limit:,}",
    )


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _result_lines(result: SearchResult, keyword_only: bool) -> Content:
    parts: list[str | tuple[str, str]] = [
        (f"{result.score:.2f}", "bold $accent"),
        f"  keyword {result.keyword_score:.2f}",
    ]
    if result.vector_score is not None and not keyword_only:
        parts.append(f" · vector {result.vector_score:.2f}")
    elif keyword_only or result.keyword_only:
        parts.append((" · keyword-only", "$text-muted"))
    parts += ["\n", (f"{result.path}:{result.lines}", "$primary")]
    snippet = preview(result.snippet, 160)
    if snippet:
        parts += ["\n", (snippet, "$text-muted")]
    return Content.assemble(*parts)


@dataclass(frozen=True, slots=True)
class ReadTarget:
    """What Enter on an option opens."""

    title: str
    body: str
    subtitle: str = ""


def _entries_apart(text: str) -> str:
    """A curated file for the read view: its entries as paragraphs with the ``§`` between
    them, so markdown does not run entries written line after line into one paragraph."""
    entries = parse_entries(text)
    return f"\n\n{ENTRY_SEPARATOR}\n\n".join(entries) if entries else text


# -- the pane -------------------------------------------------------------------------------------


class MemoryPane(Widget):
    """Curated memory against the session's snapshot, typed docs, and hybrid search."""

    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.MEMORY_PANE)
    DEFAULT_CSS = """
    MemoryPane { height: 1fr; layout: vertical; }
    MemoryPane #memory-search { border: none; height: 1; padding: 0 1; background: $boost; }
    MemoryPane #memory-search:focus { border: none; background: $primary 20%; }
    MemoryPane #memory-search-note { color: $text-muted; padding: 0 1; height: auto; }
    MemoryPane #memory-list { height: 1fr; border: none; padding: 0; }
    MemoryPane #memory-list:focus { border: none; }
    """

    def __init__(
        self, host: PaneHost, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.host = host
        self.model: MemoryModel | None = None
        self.response: SearchResponse | None = None
        self.search_error = ""
        self.refreshes = 0  # how many times the listing was rebuilt (tests wait on it)
        self._targets: dict[str, ReadTarget] = {}
        self._watcher: MemoryWatcher | None = None
        self._index: MemoryIndex | None = None
        self._width = 0  # the width previews were cut for
        self.watching = False  # the watcher has started (after its first reconcile)

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Search memory (/, then Enter)", id="memory-search")
        yield Static("", id="memory-search-note")
        yield OptionList(id="memory-list")

    def on_mount(self) -> None:
        self.query_one("#memory-search-note", Static).display = False
        self.refresh_content()
        # After the first frame: the index and the watcher must stay off the start-up path.
        self.call_after_refresh(self._start_watching)

    async def on_unmount(self) -> None:
        watcher, self._watcher = self._watcher, None
        self.watching = False
        if watcher is not None:
            await watcher.stop()

    # -- where things are ---------------------------------------------------------------------

    def _env(self) -> Environment | None:
        return self.host.env

    def _snapshot(self) -> MemorySnapshot | None:
        """The snapshot the session's system prompt holds (None until the agent has loaded)."""
        agent = self.host.agent
        return agent.memory_snapshot() if agent is not None else None

    def focus_target(self) -> None:
        """Where the focus goes when the pane is shown (the side panel calls it)."""
        self.query_one("#memory-list", OptionList).focus()

    # -- refreshing ---------------------------------------------------------------------------

    def refresh_content(self) -> None:
        """Re-read the curated files and docs (in a thread) and rebuild the listing."""
        env = self._env()
        if env is None:
            return
        self._load(env, self._snapshot())

    @work(thread=True, exclusive=True, group="memory-pane-load", exit_on_error=False)
    def _load(self, env: Environment, snapshot: MemorySnapshot | None) -> None:
        memory = CuratedMemory(
            env.project, env.user, env.settings.memory, project_trusted=env.trusted
        )

        def display(target: MemoryTarget) -> str:
            if target is MemoryTarget.USER:
                return f"user:{env.user.user_memory_file.name}"
            try:
                return env.project.memory_file.relative_to(env.project.root).as_posix()
            except ValueError:
                return env.project.memory_file.name

        docs_dir = env.project.docs_dir if env.trusted else None
        model = build_model(memory, snapshot, docs_dir, display, root=env.project.root)
        self.app.call_from_thread(self._show, model)

    def _show(self, model: MemoryModel) -> None:
        self.model = model
        self._rebuild()

    def _rebuild(self) -> None:
        listing = self.query_one("#memory-list", OptionList)
        keep = listing.highlighted_option.id if listing.highlighted_option is not None else None
        self._targets = {}
        self._width = self._preview_chars()
        options: list[Option | None] = []
        if self.response is not None:
            options += self._result_options(self.response)
        if self.model is not None:
            for view in self.model.files:
                options += self._file_options(view)
            options += self._doc_options(self.model.docs)
            for problem in self.model.problems:
                options.append(Option(Content.styled(f"! {problem}", "$warning"), disabled=True))
        listing.clear_options()
        listing.add_options(options)
        if keep is not None:
            with contextlib.suppress(OptionDoesNotExist):
                listing.highlighted = listing.get_option_index(keep)
        if listing.highlighted is None:
            listing.action_first()
        self.refreshes += 1

    def on_resize(self) -> None:
        if self.model is not None and self._preview_chars() != self._width:
            self._rebuild()

    def _preview_chars(self) -> int:
        """Entry previews fit one line of the pane (the mark takes two columns)."""
        width = self.size.width
        return max(20, width - 4) if width else PREVIEW_CHARS

    def _add(self, option_id: str, target: ReadTarget) -> str:
        self._targets[option_id] = target
        return option_id

    def _file_options(self, view: CuratedView) -> list[Option | None]:
        name = view.target.file_name
        usage = f"{view.chars:,}/{view.limit:,} characters ({round(100 * view.fill)}%)"
        header = Content.assemble((name, "bold"), "  ", fill_bar(view.chars, view.limit))
        options: list[Option | None] = [
            Option(
                header,
                id=self._add(
                    f"file:{view.target}",
                    ReadTarget(
                        f"{name} (on disk now)",
                        _entries_apart(view.text),
                        f"{view.display} · {usage}",
                    ),
                ),
            )
        ]
        if view.problem:
            options.append(Option(Content.styled(f"  ! {view.problem}", "$error"), disabled=True))
        if not view.entries:
            empty = "  (empty: ask the model to remember something)"  # its memory tool writes it
            options.append(Option(Content.styled(empty, "$text-muted"), disabled=True))
        for number, entry in enumerate(view.entries, start=1):
            options.append(self._entry_option(view, number, entry))
        if view.differs:
            size = f" ({view.snapshot_chars:,} chars)" if view.snapshot_chars is not None else ""
            options.append(
                Option(
                    Content.styled(
                        f"  +/−/~ since this session began: the model sees the snapshot{size} "
                        "until the next session",
                        "italic $text-muted",
                    ),
                    disabled=True,
                )
            )
        return options

    def _entry_option(self, view: CuratedView, number: int, entry: EntryView) -> Option:
        mark, mark_style = _MARKS[entry.status]
        text_style = "strike $text-muted" if entry.status is EntryStatus.REMOVED else ""
        # The pattern's name is in the read view; the row only says the prompt withholds it.
        flag = "[blocked] " if entry.blocked else ""
        text = preview(entry.text, max(12, self._width - len(flag)))
        parts: list[str | tuple[str, str]] = [(mark, mark_style), (flag, "bold $error")]
        parts.append((text, text_style))
        notes = {
            EntryStatus.SAME: "",
            EntryStatus.ADDED: "Added since this session started: the model sees it from the "
            "next session.",
            EntryStatus.REMOVED: "Removed from the file since this session started: the model "
            "still sees it until the next session.",
            EntryStatus.CHANGED: "Rewritten since this session started: the model sees the old "
            "text until the next session.",
        }
        subtitle = " ".join(
            part
            for part in (
                notes[entry.status],
                f"Blocked by the injection guard ({entry.blocked}): the prompt shows "
                f"[BLOCKED: {entry.blocked}] instead; review the file."
                if entry.blocked
                else "",
            )
            if part
        )
        body = entry.text
        if entry.status is EntryStatus.CHANGED:
            body += f"\n\n---\n\n**The session's snapshot holds:**\n\n{entry.previous}"
        title = f"{view.target.file_name} · entry {number}"
        target = ReadTarget(title, body, subtitle or f"{view.display}")
        option_id = self._add(f"entry:{view.target}:{number}", target)
        return Option(Content.assemble(*parts), id=option_id)

    def _doc_options(self, groups: DocGroups) -> list[Option | None]:
        if not groups:
            return []
        env = self._env()
        root = env.project.root if env is not None else None
        total = sum(len(docs) for _kind, docs in groups)
        options: list[Option | None] = [
            Option(Content.styled(f"Docs ({total})", "bold"), disabled=True)
        ]
        for kind, docs in groups:
            options.append(
                Option(Content.styled(f" {kind.value} ({len(docs)})", "$secondary"), disabled=True)
            )
            for doc in docs:
                where = _relative(doc.path, root)
                subtitle = " · ".join(p for p in (kind.value, doc.created, where) if p)
                label = Content.assemble(
                    "   ", doc.title, (f"  {doc.created}", "$text-muted") if doc.created else ""
                )
                options.append(
                    Option(
                        label,
                        id=self._add(f"doc:{where}", ReadTarget(doc.title, doc.body, subtitle)),
                    )
                )
        return options

    def _result_options(self, response: SearchResponse) -> list[Option | None]:
        options: list[Option | None] = []
        for rank, result in enumerate(response.results, start=1):
            vector = (
                f", vector {result.vector_score:.2f}"
                if result.vector_score is not None and not response.keyword_only
                else ""
            )
            subtitle = (
                f"score {result.score:.2f} (keyword {result.keyword_score:.2f}{vector}) · "
                f"match: {result.match.value}"
            )
            target = ReadTarget(f"{result.path}:{result.lines}", result.text, subtitle)
            options.append(
                Option(
                    _result_lines(result, response.keyword_only),
                    id=self._add(f"result:{rank}", target),
                )
            )
        if options:
            options.append(None)
        return options

    # -- opening ------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#memory-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self._targets.get(event.option.id or "")
        if target is not None:
            self.open(target)

    def open(self, target: ReadTarget) -> None:
        from agentsh.tui.screens.read_view import ReadView

        self.app.push_screen(ReadView(target.title, target.body, subtitle=target.subtitle))

    # -- searching ----------------------------------------------------------------------------

    def action_focus_search(self) -> None:
        self.query_one("#memory-search", Input).focus()

    def action_focus_list(self) -> None:
        self.query_one("#memory-list", OptionList).focus()

    @on(Input.Submitted, "#memory-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.search(event.value)

    def search(self, query: str) -> None:
        """Run the hybrid search for ``query`` (empty: clear the results)."""
        query = query.strip()
        note = self.query_one("#memory-search-note", Static)
        if not query:
            self.response = None
            self.search_error = ""
            note.display = False
            self._rebuild()
            return
        note.update(Content("searching…"))
        note.display = True
        self._search(query)

    @work(thread=True, exclusive=True, group="memory-pane-search", exit_on_error=False)
    def _search(self, query: str) -> None:
        from agentsh.memory.index import SearchIndexError

        try:
            response = self._open_index().search(query)
        except (SearchIndexError, OSError) as exc:
            self.app.call_from_thread(self._search_failed, f"Search failed: {exc}")
            return
        self.app.call_from_thread(self._search_done, response)

    def _search_done(self, response: SearchResponse) -> None:
        self.response = response
        self.search_error = ""
        count = len(response.results)
        head = f"{count} result{'s' if count != 1 else ''} for “{response.query}”"
        if not count:
            head = f"Nothing found for “{response.query}”"
        mode = "keyword-only" if response.keyword_only else "hybrid (keyword + vector)"
        detail = response.note if response.note else ""
        text = f"{head} · {mode}" + (f"\n{detail}" if detail and response.keyword_only else "")
        if detail and not response.keyword_only:
            text += f"\n{detail}"
        self.query_one("#memory-search-note", Static).update(Content(text))
        self._rebuild()
        listing = self.query_one("#memory-list", OptionList)
        if count:
            listing.highlighted = 0

    def _search_failed(self, message: str) -> None:
        self.search_error = message
        note = self.query_one("#memory-search-note", Static)
        note.update(Content.styled(message, "$error"))
        note.display = True

    def on_key(self, event: Any) -> None:
        """Down from the search box goes to the list; Esc there clears the search."""
        focused = self.app.focused
        search = self.query_one("#memory-search", Input)
        if focused is not search:
            return
        if event.key == "down":
            event.stop()
            self.action_focus_list()
        elif event.key == "escape" and (search.value or self.response is not None):
            event.stop()
            search.value = ""
            self.search("")

    # -- the index and its watcher ------------------------------------------------------------

    def _open_index(self) -> MemoryIndex:
        """The project's shared index (the agent's memory tools use the same one)."""
        if self._index is None:
            from agentsh.memory.index_registry import shared_index

            env = self._env()
            assert env is not None
            self._index = shared_index(
                env.user, env.project, env.settings.search, include_project=env.trusted
            )
        return self._index

    def _start_watching(self) -> None:
        if self._watcher is None and self._env() is not None:
            self._watch()

    @work(exclusive=True, group="memory-pane-watch", exit_on_error=False)
    async def _watch(self) -> None:
        import asyncio

        from agentsh.memory.index import SearchIndexError
        from agentsh.memory.watch import MemoryWatcher

        try:
            index = await asyncio.to_thread(self._open_index)
        except (SearchIndexError, OSError) as exc:
            log.warning("memory pane: the index could not be opened: %s", exc)
            self._search_failed(f"The memory index could not be opened: {exc}")
            return
        if not self.is_attached:
            return
        watcher = MemoryWatcher(index, on_update=self._index_updated)
        self._watcher = watcher
        await watcher.start()
        self.watching = watcher.running

    def _index_updated(self, _event: IndexUpdated) -> None:
        # Called on the app's loop by the watcher after each reindex.
        if self.is_attached:
            self.refresh_content()
            if self.response is not None:
                self._search(self.response.query)


def _relative(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return path.name
