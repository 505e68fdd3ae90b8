"""The Tree pane of the side panel: the whole session tree, navigable from the keyboard.

One line per entry (:mod:`agentsh.tui.panes.tree_model` computes the rows), the active path
marked ``•``, forks foldable (``⊟`` open, ``⊞`` folded), labels in ``[brackets]``, ``✎ N files``
where a checkpoint changed files. The list is a Line API widget (:class:`TreeView`): it draws
only the rows on screen, so a session of 10,000 entries opens as fast as one of ten. Typing
searches; Ctrl+D/T/U/L/A pick a filter (Ctrl+O cycles); Left/Right fold and unfold (or jump to
the fork above / below); ``l`` labels the entry under the cursor (an inline editor; empty
clears). Enter posts :class:`TreePane.Chosen` and the chat controller decides what it means
(moving the leaf, asking about a branch summary, offering to restore the files):
this pane changes nothing in the session by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from agentsh.tui.keys import KeyScope, bindings_for, spec
from agentsh.tui.panes.tree_model import RowKind, TreeFilter, TreeModel

if TYPE_CHECKING:
    from agentsh.session.session import Session
    from agentsh.session.tree import SessionTree
    from agentsh.tui.pane_host import PaneHost


_KIND_CLASS = {
    RowKind.USER: "tree--user",
    RowKind.ASSISTANT: "tree--assistant",
    RowKind.TOOL: "tree--tool",
    RowKind.ERROR: "tree--error",
    RowKind.NOTE: "tree--note",
}


class PaneLine(Widget):
    """One line of text that changes with every key (the footer, the search): it is redrawn
    without a layout pass, which would re-measure the whole screen (the chat included)."""

    DEFAULT_CSS = "PaneLine { height: 1; }"

    text: reactive[str] = reactive("", layout=False)

    def render(self) -> Content:
        return Content(self.text)


class TreeView(ScrollView, can_focus=True, inherit_bindings=False):
    """The rows of a :class:`TreeModel`, drawn a screenful at a time, with a cursor.

    It has no bindings of its own (not even the scroll keys it would inherit): the pane around
    it binds the keys, so a remapped key works the same whether the list or the label editor
    has the focus."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "tree--cursor",
        "tree--connector",
        "tree--path",
        "tree--off-path",
        "tree--leaf",
        "tree--label",
        "tree--files",
        "tree--user",
        "tree--assistant",
        "tree--tool",
        "tree--error",
        "tree--note",
    }

    DEFAULT_CSS = """
    TreeView {
        height: 1fr;
        background: $surface;
        scrollbar-size-vertical: 1;
        /* Rows are cut to the width: a horizontal scrollbar (the virtual width counts the
           vertical one's column) would take the bottom row and hide the entry there. */
        overflow-x: hidden;
        scrollbar-background: $surface;
        scrollbar-color: $panel;
    }
    TreeView > .tree--cursor { background: $panel; }
    TreeView:focus > .tree--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    TreeView > .tree--connector { color: $foreground-muted; }
    TreeView > .tree--path { color: $success; text-style: bold; }
    TreeView > .tree--off-path { text-style: dim; }
    TreeView > .tree--leaf { text-style: bold underline; }
    TreeView > .tree--label { color: $warning; text-style: bold; }
    TreeView > .tree--files { color: $accent; }
    TreeView > .tree--user { color: $primary; text-style: bold; }
    TreeView > .tree--assistant { color: $secondary; }
    TreeView > .tree--tool { color: $foreground-muted; }
    TreeView > .tree--error { color: $error; }
    TreeView > .tree--note { color: $accent; }
    """

    @dataclass
    class CursorMoved(Message):
        index: int

    def __init__(self, model: TreeModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.cursor = 0
        self._path: set[str] = set()
        self._leaf: str | None = None
        self._scroll_when_shown: bool | None = None  # centre? (None: nothing pending)

    # -- data -------------------------------------------------------------------------------

    def reload(self, *, cursor_on: str | None = None) -> None:
        """The rows changed (or only the leaf moved): redraw, keeping the cursor's entry."""
        self._path = self.model.active_path()
        self._leaf = self.model.tree.leaf_id
        rows = self.model.rows
        if cursor_on is not None:
            index = self.model.index_of(cursor_on)
            self.cursor = index if index is not None else 0
        self.cursor = max(0, min(self.cursor, len(rows) - 1))
        self.virtual_size = Size(self.size.width, len(rows))
        self.refresh()
        self.call_after_refresh(self.keep_cursor_visible)
        self.post_message(self.CursorMoved(self.cursor))

    @property
    def current_id(self) -> str | None:
        rows = self.model.rows
        return rows[self.cursor].entry_id if 0 <= self.cursor < len(rows) else None

    def move_cursor(self, index: int) -> None:
        rows = self.model.rows
        if not rows:
            return
        index = max(0, min(index, len(rows) - 1))
        if index == self.cursor:
            return
        old = self.cursor
        self.cursor = index
        self._refresh_row(old)
        self._refresh_row(index)
        self.keep_cursor_visible()
        self.post_message(self.CursorMoved(index))

    def keep_cursor_visible(self, *, center: bool = False) -> None:
        height = self.scrollable_content_region.height or self.size.height
        if height <= 0:
            # Hidden (the tree is built before the panel first opens): do it once shown.
            self._scroll_when_shown = center or bool(self._scroll_when_shown)
            return
        self._scroll_when_shown = None
        top = round(self.scroll_y)
        if center:
            self.scroll_to(y=max(0, self.cursor - height // 2), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def _refresh_row(self, index: int) -> None:
        y = index - round(self.scroll_y)
        self.refresh(Region(0, y, self.size.width, 1))

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.model.rows))
        if self._scroll_when_shown is not None:
            self.call_after_refresh(self.keep_cursor_visible, center=self._scroll_when_shown)

    # -- drawing ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        index = round(self.scroll_y) + y
        rows = self.model.rows
        if index >= len(rows):
            return Strip.blank(width, self.rich_style)
        row = rows[index]
        style = self.get_component_rich_style
        base = self.rich_style
        # Laid over every part, role colours included: a focused cursor sets its own
        # foreground, so the row reads in every theme (the role colours are made for the
        # pane's background, not for the cursor's).
        cursor = style("tree--cursor", partial=True) if index == self.cursor else Style()
        on_path = row.entry_id in self._path
        dim = Style() if on_path else style("tree--off-path", partial=True)
        text = self.model.text(row.entry_id)
        label = self.model.label(row.entry_id)
        prefix = row.prefix
        cap = max(6, width // 2)  # deep forks must not push the text off the pane
        if len(prefix) > cap:
            prefix = "…" + prefix[-(cap - 1) :]
        parts: list[tuple[str, Style]] = [
            (prefix, style("tree--connector", partial=True)),
            ("• " if on_path else "  ", style("tree--path", partial=True)),
        ]
        if row.fork:
            parts.append(("⊞ " if row.folded else "⊟ ", style("tree--connector", partial=True)))
        if label:
            parts.append((f"[{label}] ", style("tree--label", partial=True)))
        kind_style = style(_KIND_CLASS[text.kind], partial=True) + dim
        if row.entry_id == self._leaf:
            kind_style += style("tree--leaf", partial=True)
        if text.role:
            parts.append((f"{text.role}: ", kind_style))
        parts.append(
            (text.text, (style("tree--tool", partial=True) + dim) if text.role else kind_style)
        )
        files = self.model.files_changed(row.entry_id)
        if files:
            mark = f"  ✎ {files} file{'s' if files != 1 else ''}"
            parts.append((mark, style("tree--files", partial=True) + dim))
        if row.folded:
            parts.append((f"  (+{row.branches} branches)", style("tree--connector", partial=True)))
        strip = Strip([Segment(t, base + s + cursor) for t, s in parts if t])
        if strip.cell_length > width > 1:  # cut at the edge: say the row goes on
            more = Segment("…", base + style("tree--connector", partial=True) + cursor)
            strip = Strip.join([strip.crop(0, width - 1), Strip([more])])
        return strip.crop_extend(0, width, base)

    # -- keys -------------------------------------------------------------------------------

    def _page(self) -> int:
        return max(1, (self.scrollable_content_region.height or self.size.height) - 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor + self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.model.rows) - 1)

    @dataclass
    class DoubleClicked(Message):
        index: int

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_y) + event.y
        if 0 <= index < len(self.model.rows):
            self.move_cursor(index)
            if event.chain >= 2:
                self.post_message(self.DoubleClicked(index))


class TreePane(Vertical):
    """The session tree with its search line, label editor and ``(i/N) [filter]`` footer."""

    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.TREE)

    DEFAULT_CSS = """
    TreePane { height: 1fr; }
    TreePane #tree-search { height: 1; padding: 0 1; color: $foreground-muted; }
    TreePane #tree-search.-active { color: $accent; text-style: bold; }
    TreePane #tree-label-input {
        height: 1; border: none; padding: 0 1; margin: 0; background: $panel;
        display: none;
    }
    TreePane #tree-label-input.-editing { display: block; }
    TreePane #tree-footer { height: 1; padding: 0 1; color: $foreground-muted; }
    """

    @dataclass
    class Chosen(Message):
        """Enter on a row: the controller moves the leaf (a user message: edits it)."""

        entry_id: str

    @dataclass
    class LabelChanged(Message):
        entry_id: str
        label: str  # empty clears

    @dataclass
    class Closed(Message):
        """Esc with no search: give the focus back (and close a panel opened for the tree)."""

    def __init__(self, host: PaneHost, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        self._model: TreeModel | None = None
        self._labelling: str | None = None  # the entry whose label is being edited

    def compose(self) -> ComposeResult:
        yield PaneLine(id="tree-search")
        yield TreeView(self._ensure_model(None), id="tree-view")
        yield Input(placeholder="label (empty clears)", id="tree-label-input")
        yield PaneLine(id="tree-footer")

    def on_mount(self) -> None:
        # None when agentsh quits as the pane is prebuilt: children are removed first.
        if self.query(TreeView):
            self.refresh_content()

    # -- typed getters ------------------------------------------------------------------------

    @property
    def view(self) -> TreeView:
        return self.query_one(TreeView)

    @property
    def model(self) -> TreeModel:
        return self.view.model

    def _session(self) -> Session | None:
        return self.host.current_session()

    def _ensure_model(self, tree: SessionTree | None) -> TreeModel:
        if self._model is None:
            from agentsh.session.tree import SessionTree

            self._model = TreeModel(tree or SessionTree())
        elif tree is not None:
            self._model.set_tree(tree)
        return self._model

    # -- content ------------------------------------------------------------------------------

    def refresh_content(self, *, follow_leaf: bool = True) -> None:
        """Re-read the session (after a turn, a leaf move, a label, a session switch)."""
        session = self._session()
        if session is None:
            return
        model = self._ensure_model(session.tree)
        model.rebuild()
        self.view.reload(cursor_on=session.leaf_id if follow_leaf else self.view.current_id)
        if follow_leaf:
            self.call_after_refresh(self.view.keep_cursor_visible, center=True)
        self._update_lines()

    def focus_target(self) -> None:
        self.view.focus()

    def search(self, query: str) -> None:
        """Show the entries matching ``query``, as if it were typed in the tree (``/tree
        WORDS``)."""
        self.model.query = query
        self._rebuild()

    def _rebuild(self, *, keep: str | None = None) -> None:
        keep = keep if keep is not None else self.view.current_id
        self.model.rebuild()
        self.view.reload(cursor_on=keep)
        self._update_lines()

    def _update_lines(self) -> None:
        model = self.model
        search = self.query_one("#tree-search", PaneLine)
        if model.query:
            search.text = f"search: {model.query}▏"
        else:
            label_key = self._keys("tree_label")[0]
            search.text = f"type: search · {label_key}: label · ←→: fold · ⏎: go"
        search.set_class(bool(model.query), "-active")
        count = len(model.rows)
        position = self.view.cursor + 1 if count else 0
        self.query_one("#tree-footer", PaneLine).text = f"({position}/{count}) [{model.filter}]"

    @on(TreeView.CursorMoved)
    def _cursor_moved(self) -> None:
        self._update_lines()

    # -- keys ---------------------------------------------------------------------------------

    def _keys(self, binding_id: str) -> tuple[str, ...]:
        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        keys = keymap.get(binding_id, spec(binding_id).key)
        return tuple(k.strip() for k in keys.split(","))

    async def on_key(self, event: events.Key) -> None:
        """Typing searches; the label key labels (unless a search is being typed)."""
        if self._labelling is not None or not self.view.has_focus:
            return
        model = self.model
        key = event.key
        if key in self._keys("tree_label") and (not model.query or len(key) > 1 or key.isupper()):
            event.stop()
            self.start_label()
            return
        if key == "backspace" and model.query:
            event.stop()
            model.query = model.query[:-1]
            self._rebuild()
            return
        if (
            event.is_printable
            and event.character
            and (model.query or not event.character.isspace())
        ):
            event.stop()
            model.query += event.character
            self._rebuild()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While a label is typed, the keys belong to the label editor.
        return self._labelling is None

    def action_cursor_up(self) -> None:
        self.view.action_cursor_up()

    def action_cursor_down(self) -> None:
        self.view.action_cursor_down()

    def action_page_up(self) -> None:
        self.view.action_page_up()

    def action_page_down(self) -> None:
        self.view.action_page_down()

    def action_first(self) -> None:
        self.view.action_first()

    def action_last(self) -> None:
        self.view.action_last()

    @on(TreeView.DoubleClicked)
    def _double_clicked(self) -> None:
        self.action_choose()

    def action_choose(self) -> None:
        entry_id = self.view.current_id
        if entry_id is not None:
            self.post_message(self.Chosen(entry_id))

    def action_close(self) -> None:
        if self.model.query:
            self.model.query = ""
            self._rebuild()
            return
        self.post_message(self.Closed())

    def action_set_filter(self, name: str) -> None:
        self.model.filter = TreeFilter(name)
        self._rebuild()

    def action_cycle_filter(self) -> None:
        self.model.filter = self.model.filter.next()
        self._rebuild()

    def action_fold(self) -> None:
        """Fold the fork under the cursor; elsewhere, jump to the fork above."""
        view, model = self.view, self.model
        if not model.rows:
            return
        row = model.rows[view.cursor]
        if row.fork and not row.folded:
            model.folded.add(row.entry_id)
            self._rebuild(keep=row.entry_id)
            return
        above = model.fork_above(view.cursor)
        if above is not None:
            view.move_cursor(above)

    def action_unfold(self) -> None:
        """Unfold the fork under the cursor; elsewhere, jump to the next fork below."""
        view, model = self.view, self.model
        if not model.rows:
            return
        row = model.rows[view.cursor]
        if row.folded:
            model.folded.discard(row.entry_id)
            self._rebuild(keep=row.entry_id)
            return
        below = model.fork_below(view.cursor)
        if below is not None:
            view.move_cursor(below)

    # -- labels -------------------------------------------------------------------------------

    def start_label(self) -> None:
        entry_id = self.view.current_id
        if entry_id is None:
            return
        self._labelling = entry_id
        editor = self.query_one("#tree-label-input", Input)
        editor.value = self.model.label(entry_id)
        editor.add_class("-editing")
        editor.focus()

    @on(Input.Submitted, "#tree-label-input")
    def _label_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        entry_id = self._labelling
        self._end_label()
        if entry_id is not None:
            self.post_message(self.LabelChanged(entry_id, event.value.strip()))

    def _end_label(self) -> None:
        self._labelling = None
        editor = self.query_one("#tree-label-input", Input)
        editor.remove_class("-editing")
        self.view.focus()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if self._labelling is not None and isinstance(event.widget, Input):
            self._labelling = None
            self.query_one("#tree-label-input", Input).remove_class("-editing")

    def key_escape(self, event: events.Key) -> None:
        if self._labelling is not None:
            event.stop()
            self._end_label()
