"""The question asked when the leaf moves to a point whose files differ from the disk.

Docked at the bottom like the branch-summary question, so the chat of the point moved to stays
in view. It lists the files that would change (``M``odified, ``A``dded, ``D``eleted, with +/-
lines), at most :data:`MAX_ROWS` of them; ``y`` restores them, ``n`` (Enter, Esc) keeps the
files as they are, ``d`` shows the diff below the list (``d`` again hides it). Files changed
outside agentsh since the last checkpoint are named and kept unless the user confirms a second
time (``y`` again; ``n`` restores the others only). Files that cannot be restored say why.
Keys typed before the typing paused after it appeared are no answer (:mod:`agentsh.tui.key_grace`):
their text is kept in :attr:`RestoreFilesScreen.typed` for the editor.

The screen returns a :class:`RestoreChoice`; the caller restores (nothing here writes).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agentsh.checkpoints.restore import PlanItem, RestorePlan
from agentsh.tui.key_grace import KeyGrace, keep_typed
from agentsh.tui.keys import KeyScope, bindings_for, display_key, spec
from agentsh.tui.widgets.tool_block import diff_content

MAX_ROWS = 8
MAX_DIFF_LINES = 2000  # a longer diff is cut: the question is answered from its start
_ACTIONS = {"modify": "M", "create": "A", "delete": "D", "mode": "m"}


@dataclass(frozen=True, slots=True)
class RestoreChoice:
    restore: bool
    include_outside: bool = False


def _plural(count: int, word: str = "file") -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _printable(text: str) -> str:
    """A path as a visible string (a control character in a file name is shown, not kept)."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def item_line(item: PlanItem) -> Content:
    """One file of the plan: action, path, +/- lines and why it is kept, if it is."""
    if item.binary:
        counts = Content("binary")
    elif item.action == "mode":
        counts = Content("mode changed")
    else:
        counts = Content.assemble(
            (f"+{item.added}", "$success"), " ", (f"-{item.removed}", "$error")
        )
    parts: list[Content | str | tuple[str, str]] = [
        (f" {_ACTIONS.get(item.action, '?')} ", "bold"),
        _printable(item.path),
        "  ",
        counts,
    ]
    if item.problem:
        parts.append((f"  kept: {item.problem}", "$foreground-muted"))
    elif item.outside:
        parts.append(("  changed outside agentsh since the last checkpoint", "$warning"))
    return Content.assemble(*parts)


class RestoreFilesScreen(ModalScreen[RestoreChoice]):
    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.RESTORE_FILES)
    AUTO_FOCUS = ""

    DEFAULT_CSS = """
    RestoreFilesScreen { align: center bottom; background: $background 40%; }
    RestoreFilesScreen #restore-box {
        width: 100%; height: auto; max-height: 90%; padding: 0 1; margin: 0 0 1 0;
        background: $surface; border: round $accent;
    }
    RestoreFilesScreen #restore-title { height: auto; }
    RestoreFilesScreen #restore-files { height: auto; }
    RestoreFilesScreen #restore-diff {
        height: auto; max-height: 24; background: $panel; margin: 1 0 0 0;
    }
    RestoreFilesScreen #restore-keys { height: auto; color: $foreground-muted; margin: 1 0 0 0; }
    """

    def __init__(
        self,
        plan: RestorePlan,
        where: str,
        load_diff: Callable[[], Awaitable[str]],
        keymap: dict[str, str] | None = None,
    ) -> None:
        """``where`` names the point moved to (e.g. "“fix the parser”"); ``load_diff`` gives
        the plan's diff when the user asks for it."""
        super().__init__(id="restore-files")
        self.plan = plan
        self.where = where
        self._load_diff = load_diff
        self._keymap = keymap or {}
        self.confirming = False  # asking the second time, for files changed outside agentsh
        self._diff_loaded = False
        self.grace = KeyGrace()
        self.typed: list[str] = []  # keys typed ahead, as text for the editor

    def on_mount(self) -> None:
        self.grace.start()

    def on_key(self, event: events.Key) -> None:
        """A key typed before the typing paused is no answer: its text goes to the editor."""
        if self.grace.early():
            keep_typed(self.typed, event.key, event.character)
            event.stop()
            event.prevent_default()

    def _key(self, binding_id: str) -> str:
        return display_key(self._keymap.get(binding_id, spec(binding_id).key).split(",")[0])

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(id="restore-box"):
            yield Static(self._title(), id="restore-title")
            rows = [item_line(item) for item in plan.items[:MAX_ROWS]]
            more = len(plan.items) - MAX_ROWS
            if more > 0:
                rows.append(Content(f" … and {_plural(more)} more (d shows them all)"))
            yield Static(Content("\n").join(rows), id="restore-files")
            with VerticalScroll(id="restore-diff") as diff:
                diff.display = False
                yield Static("", id="restore-diff-text")
            yield Static(self._keys(), id="restore-keys")

    def _title(self) -> Content:
        plan = self.plan
        if self.confirming:
            names = ", ".join(_printable(i.path) for i in plan.outside[:4])
            more = len(plan.outside) - 4
            names += f" and {more} more" if more > 0 else ""
            return Content.assemble(
                (f"{_plural(len(plan.outside))} changed outside agentsh", "bold $warning"),
                f" since the last checkpoint ({names}). "
                f"Overwrite {'it' if len(plan.outside) == 1 else 'them'} too?",
            )
        one = len(plan.items) == 1
        return Content.assemble(
            ("Files", "bold $accent"),
            f": {_plural(len(plan.items))} {'differs' if one else 'differ'} from {self.where}. "
            f"Bring {'it back as it was' if one else 'them back as they were'}?",
        )

    def _keys(self) -> Content:
        def key(binding_id: str, label: str) -> tuple[tuple[str, str], str]:
            return (self._key(binding_id), "bold $accent"), f" {label}   "

        if self.confirming:
            return Content.assemble(
                *key("restore_yes", "overwrite them too"),
                *key("restore_no", "restore the other files only"),
                *key("restore_diff", "diff"),
            )
        return Content.assemble(
            *key("restore_yes", "restore"),
            *key("restore_no", "keep files as they are"),
            *key("restore_diff", "diff"),
        )

    def _refresh_question(self) -> None:
        self.query_one("#restore-title", Static).update(self._title())
        self.query_one("#restore-keys", Static).update(self._keys())

    def action_answer(self, answer: str) -> None:
        plan = self.plan
        if answer == "yes":
            if self.confirming:
                self.dismiss(RestoreChoice(True, include_outside=True))
            elif plan.outside:
                self.confirming = True
                self._refresh_question()
            else:
                self.dismiss(RestoreChoice(True))
        elif self.confirming:
            # "no" the second time: the other files only (nothing if there are none).
            self.dismiss(RestoreChoice(bool(plan.writable)))
        else:
            self.dismiss(RestoreChoice(False))

    async def action_diff(self) -> None:
        box = self.query_one("#restore-diff", VerticalScroll)
        if box.display:
            box.display = False
            return
        if not self._diff_loaded:
            text = await self._load_diff()
            self._diff_loaded = True
            lines = text.splitlines()
            if len(lines) > MAX_DIFF_LINES:
                hidden = len(lines) - MAX_DIFF_LINES
                text = "\n".join(lines[:MAX_DIFF_LINES]) + f"\n… {hidden} more lines"
            shown = diff_content(text) if text.strip() else Content("(no text differences)")
            self.query_one("#restore-diff-text", Static).update(shown)
        box.display = True
        box.scroll_home(animate=False)
