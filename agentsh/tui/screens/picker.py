"""A list picker docked at the bottom, over the editor, with the transcript still in view.

Used by ``/theme`` (live preview while moving), ``/resume`` and ``-r`` (sessions, searchable by
first message), and ``/model`` (where a typed model string that matches nothing is taken as
is). Typing filters; Up/Down move (``on_highlight`` runs for each move, which is how themes
preview); Enter picks; Esc closes with ``None``.

Items that are slow to find (``/model``'s list needs litellm, seconds to import) come from
``load``, run in a thread once the picker shows: the quick items can be chosen at once, and a
``loading_text`` row says more are coming until they arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from agentsh.tui.keys import KeyScope, bindings_for


@dataclass(frozen=True, slots=True)
class PickerItem:
    value: str
    label: Content | str
    search_text: str = ""  # what the filter matches (default: the label's plain text)


class PickerScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings_for(KeyScope.PICKER),
        Binding("down", "move(1)", show=False, priority=True),
        Binding("up", "move(-1)", show=False, priority=True),
    ]

    def __init__(
        self,
        title: str,
        items: Sequence[PickerItem],
        *,
        current: str | None = None,
        on_highlight: Callable[[str], None] | None = None,
        placeholder: str = "type to filter",
        empty_text: str = "nothing to choose from",
        allow_custom: bool = False,
        load: Callable[[], Sequence[PickerItem]] | None = None,
        loading_text: str = "loading…",
    ) -> None:
        super().__init__(classes="picker-screen")
        self.title_text = title
        self.items = list(items)
        self.current = current
        self.on_highlight = on_highlight
        self.placeholder = placeholder
        self.empty_text = empty_text
        self.allow_custom = allow_custom  # Enter with no match returns the typed text
        self.shown: list[PickerItem] = []
        self.load = load
        self.loading_text = loading_text
        # Not `loading`: that is Textual's reactive, which covers the whole screen with a
        # spinner until it is reset, hiding the quick items it is there to offer.
        self.fetching = load is not None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker") as box:
            box.border_subtitle = "↑↓ choose · Enter pick · Esc close"
            yield Static(Content.styled(self.title_text, "bold $primary"), id="picker-title")
            yield Input(placeholder=self.placeholder, id="picker-filter")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        self._fill("")
        if self.current is not None:
            for i, item in enumerate(self.shown):
                if item.value == self.current:
                    self.query_one(OptionList).highlighted = i
                    break
        self.query_one(Input).focus()
        if self.load is not None:
            self.run_worker(self._load, thread=True, group="picker-load", exit_on_error=False)

    def _load(self) -> None:
        assert self.load is not None
        try:
            items = list(self.load())
        except Exception:  # noqa: BLE001 - worker boundary: the quick items stay usable
            items = []
        self.app.call_from_thread(self._loaded, items)

    def _loaded(self, items: list[PickerItem]) -> None:
        """More items arrived: add the new ones; the filter and the highlighted item stay."""
        self.fetching = False
        known = {item.value for item in self.items}
        self.items += [item for item in items if item.value not in known]
        if not self.is_attached:
            return
        options = self.query_one(OptionList)
        index = options.highlighted
        chosen = self.shown[index].value if index is not None and index < len(self.shown) else None
        self._fill(self.query_one(Input).value)
        for i, item in enumerate(self.shown):
            if item.value == chosen:
                options.highlighted = i
                break

    def _fill(self, query: str) -> None:
        words = query.lower().split()
        self.shown = [
            item
            for item in self.items
            if all(w in (item.search_text or str(item.label)).lower() for w in words)
        ]
        options = self.query_one(OptionList)
        options.clear_options()
        if self.shown:
            options.add_options([Option(item.label) for item in self.shown])
            options.highlighted = 0
        elif not self.fetching:
            options.add_option(Option(Content.styled(self.empty_text, "italic"), disabled=True))
        if self.fetching:
            loading = Content.styled(self.loading_text, "italic")
            options.add_option(Option(loading, id="picker-loading", disabled=True))

    @on(Input.Changed, "#picker-filter")
    def _filter(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(OptionList.OptionHighlighted, "#picker-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self.on_highlight is not None and 0 <= event.option_index < len(self.shown):
            self.on_highlight(self.shown[event.option_index].value)

    @on(OptionList.OptionSelected, "#picker-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if 0 <= event.option_index < len(self.shown):
            self.dismiss(self.shown[event.option_index].value)

    @on(Input.Submitted, "#picker-filter")
    def _submitted(self) -> None:
        options = self.query_one(OptionList)
        typed = self.query_one(Input).value.strip()
        if options.highlighted is not None and self.shown:
            self.dismiss(self.shown[options.highlighted].value)
        elif self.allow_custom and typed:
            self.dismiss(typed)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if not self.shown:
            return
        current = options.highlighted if options.highlighted is not None else -step
        options.highlighted = max(0, min(len(self.shown) - 1, current + step))

    def action_close(self) -> None:
        self.dismiss(None)
