"""The message editor: multi-line input, history, and ``/`` and ``@`` completion.

Enter sends, Shift+Enter or Ctrl+J adds a line. Up on the first line and Down on the last line
walk the history of sent messages (the draft is kept while walking). Typing ``/`` at the start
offers the slash commands; typing ``@`` offers project files ranked by a fuzzy match. The menu
is an ``OptionList`` above the editor: Up/Down move in it, Tab or Enter accept, Esc closes it.
The editor only posts :class:`Composer.Submitted`; what a message does is the controller's
business. What to offer comes from outside (``files``, ``commands`` and ``command_arguments``,
set by the App), so the editor knows no command table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.css.scalar import Scalar
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from agentsh.tui.file_list import rank
from agentsh.tui.keys import spec
from agentsh.tui.widgets.typing_clock import key_typed, message_sent, text_typed

_AT_WORD = re.compile(r"(?:^|\s)@([^\s@]*)$")
MENU_ROWS = 8
EDITOR_ROWS = 12  # the editor's height at most, borders included
USAGE_COLUMN = 24  # the command column of the menu, at most (summaries start after it)


class CommandHint(Protocol):
    """What the menu shows of a slash command."""

    @property
    def name(self) -> str: ...

    @property
    def argument(self) -> str: ...

    @property
    def summary(self) -> str: ...


def _no_commands(_prefix: str) -> Sequence[CommandHint]:
    return []


def _no_arguments(_word: str, _prefix: str) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class Completion:
    replace_from: int  # column in the cursor's line where the replaced word starts
    insert: str
    label: Content
    submit: bool = False  # a command without arguments runs on Enter


class CompletionMenu(OptionList):
    """The completion list shown above the editor."""

    def __init__(self) -> None:
        super().__init__(id="completion-menu")
        self.completions: list[Completion] = []

    def show(self, completions: list[Completion], *, highlight: bool = True) -> None:
        """Offer ``completions``; without ``highlight`` none is chosen yet (Enter sends the
        text as it is, Up/Down or Tab choose)."""
        self.completions = completions
        self.clear_options()
        self.add_options([Option(c.label) for c in completions])
        self.display = bool(completions)
        if completions:
            self.highlighted = 0 if highlight else None

    def hide(self) -> None:
        self.completions = []
        self.clear_options()
        self.display = False

    @property
    def current(self) -> Completion | None:
        if not self.display or self.highlighted is None or not self.completions:
            return None
        return self.completions[self.highlighted]


class PromptInput(TextArea):
    # Enter, Shift+Enter/Ctrl+J and Tab are handled in ``_on_key``, not as bindings: a priority
    # binding runs as soon as the App sees the key, ahead of characters still queued for this
    # widget, so a fast typist's last characters would arrive after their message was sent.
    BINDINGS: ClassVar[list[BindingType]] = []
    WIDGET_KEYS = ("submit", "newline", "complete", "cycle_mode")

    @dataclass
    class Submitted(Message):
        """The user sent ``text`` (a message or a slash command)."""

        text: str

    class ModeCycled(Message):
        """Shift+Tab: the App moves the approval mode on (agentsh/tui/approval_modes.py)."""

    def __init__(self) -> None:
        super().__init__(
            "",
            id="prompt",
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Message agentsh  (/ commands · @ files · F1 keys)",
        )
        self.sent_history: list[str] = []
        #: where the history is kept across restarts (the App sets it; None: this run only)
        self.history_file: Path | None = None
        self._history_index: int | None = None
        self._draft = ""
        self.menu: CompletionMenu | None = None
        self._menu_for: tuple[str, tuple[int, int]] | None = None  # what the menu offers for
        self.files: Callable[[], list[str]] = list
        #: the commands whose name starts with a prefix, and the words an argument may be
        self.commands: Callable[[str], Sequence[CommandHint]] = _no_commands
        self.command_arguments: Callable[[str, str], list[str]] = _no_arguments

    # -- sending ------------------------------------------------------------------------------

    def action_submit(self) -> None:
        self._sync_menu()
        completion = self.menu.current if self.menu is not None else None
        if completion is not None and completion.insert.strip() != self.text.strip():
            # Enter on a partial word completes it; a command without arguments also runs.
            self.accept(completion)
            if not completion.submit:
                return
        if self.menu is not None:
            self.menu.hide()
        text = self.text
        if not text.strip():
            return
        if not self.sent_history or self.sent_history[-1] != text:
            self.sent_history.append(text)
            if self.history_file is not None:
                self._save_history(self.history_file, text)
        self._history_index = None
        self._draft = ""
        self.clear()
        message_sent()  # the keys were the message's: a reply's frames no longer give way
        self.post_message(self.Submitted(text))

    def action_newline(self) -> None:
        start, end = self.selection
        self._replace_via_keyboard("\n", start, end)

    def action_complete(self) -> None:
        self._sync_menu()
        menu = self.menu
        if menu is not None and menu.current is None and menu.display and menu.completions:
            menu.highlighted = 0  # offered with none chosen: Tab takes the first
        if menu is not None and menu.current is not None:
            self.accept(menu.current)
        else:
            self.screen.focus_next()

    # -- history ------------------------------------------------------------------------------

    def action_cursor_up(self, select: bool = False) -> None:
        if self._menu_step(-1):
            return
        if not select and self.cursor_location[0] == 0 and self.sent_history:
            self._walk_history(-1)
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if self._menu_step(+1):
            return
        last_row = self.document.line_count - 1
        if not select and self.cursor_location[0] == last_row and self._history_index is not None:
            self._walk_history(+1)
            return
        super().action_cursor_down(select)

    def _walk_history(self, step: int) -> None:
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.sent_history) - 1
        else:
            index = self._history_index + step
        if index < 0:
            return
        if index >= len(self.sent_history):
            self._history_index = None
            self._set_text(self._draft)
            return
        self._history_index = index
        self._set_text(self.sent_history[index])

    def load_history(self) -> None:
        """Read the saved history off the UI thread (after the first frame); messages sent
        meanwhile stay the newest."""
        path = self.history_file
        if path is None:
            return

        def load() -> None:
            from agentsh.tui.prompt_history import load_history

            saved = load_history(path)
            self.app.call_from_thread(self._history_loaded, saved)

        self.run_worker(load, thread=True, group="history-load", exit_on_error=False)

    def _history_loaded(self, saved: list[str]) -> None:
        self.sent_history[:0] = saved
        if self._history_index is not None:
            self._history_index += len(saved)

    def _save_history(self, path: Path, text: str) -> None:
        def save() -> None:
            from agentsh.tui.prompt_history import append_history

            append_history(path, text)

        self.run_worker(save, thread=True, group="history-save", exit_on_error=False)

    def _set_text(self, text: str) -> None:
        self.put_text(text)

    def put_text(self, text: str) -> None:
        """Replace the draft with ``text``, the cursor at its end, where typing goes on.
        (Setting ``text`` alone leaves the cursor at the start.)"""
        self.text = text
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document[last])))

    # -- completion ---------------------------------------------------------------------------

    def _menu_step(self, step: int) -> bool:
        self._sync_menu()
        menu = self.menu
        if menu is None or not menu.display or not menu.completions:
            return False
        if menu.highlighted is None:  # offered with none chosen: Down the first, Up the last
            menu.highlighted = 0 if step > 0 else len(menu.completions) - 1
            return True
        menu.highlighted = (menu.highlighted + step) % len(menu.completions)
        return True

    def fit(self, screen_height: int) -> None:
        """Grow to :data:`EDITOR_ROWS` rows at most, and to no more than the half of the chat
        column the composer may take (``#composer`` in agentsh.tcss): past it the composer cut
        the editor's last rows off, the cursor's among them (a long paste at 80x24)."""
        rows = max(3, min(EDITOR_ROWS, (screen_height - 1) // 2))
        if self.styles.max_height != Scalar.from_number(rows):
            self.styles.max_height = rows
            self.call_after_refresh(self.scroll_cursor_visible)  # shorter: keep the cursor

    def _keys(self, binding_id: str) -> tuple[str, ...]:
        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        keys = keymap.get(binding_id, spec(binding_id).key)
        return tuple(k.strip() for k in keys.split(","))

    async def _on_key(self, event: events.Key) -> None:
        key_typed()  # a streamed reply's frames give way to the keys (widgets/typing_clock.py)
        key = event.key
        action: Callable[[], None] | None = None
        if key == "escape" and self.menu is not None and self.menu.display:
            action = self.menu.hide
        elif key in self._keys("submit"):
            action = self.action_submit
        elif key in self._keys("newline"):
            action = self.action_newline
        elif key in self._keys("complete"):
            action = self.action_complete
        elif key in self._keys("cycle_mode"):
            action = self._cycle_mode
        if action is not None:
            event.stop()
            event.prevent_default()
            action()
            return
        await super()._on_key(event)

    def _cycle_mode(self) -> None:
        self.post_message(self.ModeCycled())

    def _sync_menu(self) -> None:
        """Offer what fits the text as it is now. The menu follows the text through
        ``Changed`` messages, which queue behind keys already sent: a fast "/name" + Enter
        reached Enter while the menu still offered what fits "/" (with /help chosen first)."""
        if self.menu is not None and self._menu_for != (self.text, self.cursor_location):
            self._update_completions()

    @on(TextArea.Changed)
    def _update_completions(self) -> None:
        if self.text:  # (cleared by a send: not a key)
            text_typed()  # also a key the App typed in for the user (the editor not focused)
        if self.menu is None:
            return
        self._menu_for = (self.text, self.cursor_location)
        completions = self.completions()
        # "/compact " shows the words it takes, none chosen: Enter runs it as typed.
        chosen = not completions or completions[0].replace_from < self.cursor_location[1]
        self.menu.show(completions, highlight=chosen)

    def completions(self) -> list[Completion]:
        """What to offer for the text before the cursor."""
        row, col = self.cursor_location
        line = self.document[row][:col]
        if row == 0 and line.startswith("/") and " " not in line and "\n" not in self.text:
            commands = self.commands(line[1:])
            # One line a command, the summaries in one column (the menu cuts them with an
            # ellipsis): a long argument pushes only its own summary along.
            usage = [f"/{c.name} {c.argument}".rstrip() for c in commands]
            column = min(max(map(len, usage), default=0), USAGE_COLUMN)
            return [
                Completion(
                    0,
                    f"/{c.name} " if c.argument else f"/{c.name}",
                    Content.assemble(
                        (f"/{c.name}", "bold"),
                        f"{text[len(c.name) + 1 :]:<{column - len(c.name) - 1}}  ",
                        (c.summary, "dim"),
                    ),
                    submit=not c.argument,
                )
                for c, text in zip(commands, usage, strict=True)
            ]
        if row == 0 and line.startswith("/") and "\n" not in self.text:
            # A command's argument: the words it takes are offered after its space, and
            # narrowed as letters are typed (Enter on "/compact " runs the command as it is).
            word, _, typed = line[1:].partition(" ")
            # The word being typed (empty right after a space); the words before it choose
            # what it may be (/mcp restart -> the servers' names).
            last = typed.rsplit(" ", 1)[-1]
            start = len(line) - len(last)
            offered = [
                Completion(start, choice, Content(choice))
                for choice in self.command_arguments(word, typed)
                if choice != last
            ]
            if offered or " " not in typed:
                return offered  # else an @file in the argument may still be completed
        at = _AT_WORD.search(line)
        if at:
            query = at.group(1)
            start = at.start(1) - 1
            return [
                Completion(start, f"@{m.path} ", Content(m.path))
                for m in rank(query, self.files(), limit=MENU_ROWS * 2)
            ]
        return []

    def accept(self, completion: Completion) -> None:
        """Replace the word being completed with the completion."""
        row, col = self.cursor_location
        self.replace(completion.insert, (row, completion.replace_from), (row, col))
        if self.menu is not None:
            self.menu.hide()


class Composer(Vertical):
    """The completion menu above the editor, wired together."""

    def compose(self) -> ComposeResult:
        menu = CompletionMenu()
        menu.display = False
        yield menu
        prompt = PromptInput()
        prompt.menu = menu
        yield prompt

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @on(OptionList.OptionSelected, "#completion-menu")
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        prompt = self.prompt
        menu = prompt.menu
        if menu is not None and 0 <= event.option_index < len(menu.completions):
            prompt.accept(menu.completions[event.option_index])
        prompt.focus()
