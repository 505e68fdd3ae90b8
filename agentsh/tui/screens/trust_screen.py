"""The trust question: what a project folder wants to change, and whether to let it.

Shown before anything of the folder is loaded (see :mod:`agentsh.trust`): the launcher runs it
in a small app of its own, ahead of the main one, so no project setting, instruction or memory
reaches the screen, the keymap or the agent before the user answers. ``y`` trusts (the answer
is stored with a hash of the files listed), ``n`` or Esc starts without them (remembered for
the same files: :func:`agentsh.trust.decline`), Ctrl+Q quits. The keys are fixed: no
configuration changes them. Every line that comes from the folder is shown as plain text with
control characters made visible.

Keys typed before the question was on screen are not answers: a sentence typed at once after
``agentsh`` (``say hi to you``) trusted the folder by its ``y`` and lost the rest. Until the
typing has paused for half a second after the question appeared, what is typed is kept as the
start of the user's first message (:attr:`TrustApp.typed`, put in the editor; see
:mod:`agentsh.tui.key_grace`).
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agentsh.termsafe import one_line
from agentsh.trust import TrustCheck, TrustState
from agentsh.tui.key_grace import KeyGrace, keep_typed
from agentsh.tui.terminal_safety import install as install_terminal_safety

install_terminal_safety()  # no control sequence in drawn text reaches the terminal


class TrustScreen(ModalScreen[bool | None]):
    """Asks whether to trust a folder; returns True, False, or None (quit)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        ("y", "answer(True)", "Trust"),
        ("n,escape", "answer(False)", "Don't trust"),
        ("ctrl+q,ctrl+c", "answer(None)", "Quit"),
        ("up", "scroll_body(-1)", "Scroll up"),
        ("down", "scroll_body(1)", "Scroll down"),
        ("pageup", "scroll_body(-10)", "Page up"),
        ("pagedown", "scroll_body(10)", "Page down"),
    ]
    AUTO_FOCUS = ""

    DEFAULT_CSS = """
    TrustScreen { align: center middle; background: $background 60%; }
    TrustScreen #trust-box {
        width: 90%; max-width: 110; height: auto; max-height: 90%; padding: 1 2;
        background: $surface; border: round $warning;
    }
    TrustScreen #trust-title { height: auto; margin-bottom: 1; }
    TrustScreen #trust-files { height: auto; margin-bottom: 1; }
    TrustScreen .trust-file { height: auto; }
    TrustScreen #trust-explain { height: auto; color: $foreground-muted; margin-top: 1; }
    TrustScreen #trust-keys { height: auto; }
    TrustScreen #trust-box { border-subtitle-color: $foreground-muted; }
    """

    def __init__(self, check: TrustCheck, typed: list[str] | None = None) -> None:
        super().__init__(id="trust")
        self.check = check
        self.typed = typed if typed is not None else []  # the keys typed ahead, as text
        self.grace = KeyGrace()

    def on_mount(self) -> None:
        self.grace.start()
        self._show_typed()  # keys the app took before the question was pushed
        self.call_after_refresh(self._fit)

    def on_key(self, event: events.Key) -> None:
        """A key before the typing paused is text typed ahead, kept for the editor; Ctrl+Q and
        Ctrl+C still quit."""
        if event.key in ("ctrl+q", "ctrl+c"):
            return
        if self.grace.early():
            keep_typed(self.typed, event.key, event.character)
            self._show_typed()
            event.stop()
            event.prevent_default()

    def compose(self) -> ComposeResult:
        check = self.check
        changed = check.state is TrustState.CHANGED
        with Vertical(id="trust-box"):
            yield Static(
                Content.assemble(
                    (
                        "Do you trust this folder?" if not changed else "This folder changed",
                        "bold $warning",
                    ),
                    "\n",
                    (one_line(str(check.root)), "bold"),
                    (
                        " changed since you trusted it. New or different:"
                        if changed
                        else " holds files that change what agentsh does or tells the model:"
                    ),
                ),
                id="trust-title",
            )
            # The files and what trusting means scroll; the question and its keys stay in view
            # (a long folder path at 80x24 pushed "y trust ... Ctrl+Q quit" out of the box).
            body = VerticalScroll(id="trust-files")
            body.can_focus = False  # the keys answer; ↑↓ scroll it (the screen's bindings)
            with body:
                for line in check.lines(limit=40):
                    yield Static(Content("  • " + one_line(line)), classes="trust-file")
                programs = any(not f.loads for f in check.findings)
                yield self._explain(programs)
            yield Static(
                Content.assemble(
                    ("y", "bold $accent"),
                    " trust this folder   ",
                    ("n", "bold $accent"),
                    " / ",
                    ("Esc", "bold $accent"),
                    " not now (start without them)   ",
                    ("Ctrl+Q", "bold $accent"),
                    " quit",
                ),
                id="trust-keys",
            )

    @staticmethod
    def _explain(programs: bool) -> Static:
        return Static(
            Content(
                "Whoever wrote this folder wrote these files; a cloned repository is "
                "someone else's. Trusting loads its settings, instructions and memory"
                + (
                    ", lets your allow rules (such as Bash(git:*)) run the git hooks and "
                    "settings listed,"
                    if programs
                    else ","
                )
                + " and remembers your answer for exactly these files: a change asks "
                "again. Not trusting starts without them (remembered until they change; "
                "`agentsh trust` asks again); your own settings and USER.md still work. "
                "Either way a project can never choose the model, its server, or your keys."
            ),
            id="trust-explain",
        )

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """The scrolling part gets what the box (90% of the screen high) leaves beside the
        question, the keys, the frame and the padding."""
        if not self.is_mounted:
            return
        room = int(self.size.height * 0.9)
        title = self.query_one("#trust-title").outer_size.height + 1  # and its margin
        keys = self.query_one("#trust-keys").outer_size.height
        rows = max(3, room - title - keys - 4 - 1)  # frame 2, padding 2, the body's margin
        body = self.query_one("#trust-files", VerticalScroll)
        if body.styles.max_height is None or body.styles.max_height.value != rows:
            body.styles.max_height = rows

    def action_scroll_body(self, rows: int) -> None:
        body = self.query_one("#trust-files", VerticalScroll)
        body.scroll_to(y=body.scroll_target_y + rows, animate=False, immediate=True)

    def _show_typed(self) -> None:
        """Says where what was typed ahead goes, so a ``y`` in it is seen not to answer: on
        the frame, which a full box at 80x24 does not push out of sight."""
        text = one_line("".join(self.typed))
        shown = text if len(text) <= 40 else "…" + text[-39:]
        box = self.query_one("#trust-box", Vertical)
        # Content, not a str: a "[" the user typed is no markup.
        box.border_subtitle = Content(f"kept for your first message: “{shown}”") if text else None

    def action_answer(self, answer: bool | None) -> None:
        self.dismiss(answer)


class TrustApp(App[bool | None]):
    """Just the question, before the main app exists."""

    TITLE = "agentsh"

    def __init__(self, check: TrustCheck, typed: list[str] | None = None) -> None:
        super().__init__()
        self.check = check
        self.typed = typed if typed is not None else []

    def on_mount(self) -> None:
        self.push_screen(TrustScreen(self.check, self.typed), self.exit)

    def on_key(self, event: events.Key) -> None:
        """A key that reached the app before the question was pushed: typed ahead."""
        if not isinstance(self.screen, TrustScreen):
            keep_typed(self.typed, event.key, event.character)


def ask_trust(check: TrustCheck, typed: list[str] | None = None) -> bool | None:
    """Run the question full-screen; True (trust), False (not now) or None (quit). What was
    typed before it could be answered is added to ``typed``, one character an item."""
    return TrustApp(check, typed).run()
