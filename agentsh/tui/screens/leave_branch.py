"""The question asked when the leaf leaves a branch: attach a short summary of it, or not.

Docked at the bottom like the pickers, so the chat stays in view. One key answers: ``n`` (or
Enter) leaves without a summary, ``y`` attaches one, ``i`` asks for instructions first (a
one-line editor; Enter confirms, Esc goes back to the question), Esc stays where you are. The
screen returns a :class:`LeaveDecision`, or None when the move is cancelled. Keys typed before
the typing paused after it appeared answer nothing (:mod:`agentsh.tui.key_grace`): their text
is kept in :attr:`LeaveBranchScreen.typed` for the editor.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from agentsh.tui.key_grace import KeyGrace, keep_typed
from agentsh.tui.keys import KeyScope, bindings_for, display_key, spec


class SummaryChoice(StrEnum):
    NO = "no"
    YES = "yes"


@dataclass(frozen=True, slots=True)
class LeaveDecision:
    choice: SummaryChoice
    instructions: str = ""


class LeaveBranchScreen(ModalScreen[LeaveDecision | None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.BRANCH_SUMMARY)
    AUTO_FOCUS = ""  # the keys answer; the instructions editor takes the focus only for "i"

    DEFAULT_CSS = """
    LeaveBranchScreen { align: center bottom; background: $background 40%; }
    LeaveBranchScreen #leave-box {
        width: 100%; height: auto; padding: 0 1; margin: 0 0 1 0;
        background: $surface; border: round $warning;
    }
    LeaveBranchScreen #leave-title { height: auto; }
    LeaveBranchScreen #leave-keys { height: auto; color: $foreground-muted; }
    LeaveBranchScreen #leave-instructions {
        height: 1; border: none; padding: 0 1; margin: 0; background: $panel;
    }
    """

    def __init__(self, what: str, keymap: dict[str, str] | None = None) -> None:
        """``what`` names the branch being left (e.g. "3 messages, from “fix the parser”")."""
        super().__init__(id="leave-branch")
        self.what = what
        self._keymap = keymap or {}
        self.grace = KeyGrace()
        self.typed: list[str] = []  # keys typed ahead, as text for the editor

    def on_mount(self) -> None:
        self.grace.start()

    def on_key(self, event: events.Key) -> None:
        """A key typed before the typing paused is no answer (a "y" in a sentence started a
        paid summary): its text goes to the editor."""
        if not self._editor.display and self.grace.early():
            keep_typed(self.typed, event.key, event.character)
            event.stop()
            event.prevent_default()

    def _key(self, binding_id: str) -> str:
        return display_key(self._keymap.get(binding_id, spec(binding_id).key))

    def compose(self) -> ComposeResult:
        with Vertical(id="leave-box"):
            yield Static(
                Content.assemble(
                    ("Leaving this branch", "bold $warning"),
                    f" ({self.what}). Attach a short summary of it where you go?",
                ),
                id="leave-title",
            )
            yield Static(
                Content.assemble(
                    (self._key("summary_no"), "bold $accent"),
                    " no   ",
                    (self._key("summary_yes"), "bold $accent"),
                    " yes   ",
                    (self._key("summary_instructions"), "bold $accent"),
                    " yes, with instructions   ",
                    (self._key("summary_cancel"), "bold $accent"),
                    " stay here",
                ),
                id="leave-keys",
            )
            editor = Input(
                placeholder="what should the summary focus on? (Enter: go, Esc: back)",
                id="leave-instructions",
            )
            editor.display = False
            yield editor

    @property
    def _editor(self) -> Input:
        return self.query_one("#leave-instructions", Input)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While instructions are typed, letters are text, not answers.
        return not self._editor.display

    def action_answer(self, answer: str) -> None:
        match answer:
            case "no":
                self.dismiss(LeaveDecision(SummaryChoice.NO))
            case "yes":
                self.dismiss(LeaveDecision(SummaryChoice.YES))
            case "instructions":
                self._editor.display = True
                self._editor.focus()
            case _:
                self.dismiss(None)

    @on(Input.Submitted, "#leave-instructions")
    def _instructions(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(LeaveDecision(SummaryChoice.YES, event.value.strip()))

    def key_escape(self, event: events.Key) -> None:
        """Esc in the instructions editor goes back to the question."""
        if self._editor.display:
            event.stop()
            event.prevent_default()
            self._editor.display = False
            self._editor.value = ""
            self.set_focus(None)
