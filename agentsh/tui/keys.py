"""Every key binding of the TUI, in one table, and the user's remapping of them.

Each :class:`KeySpec` is one Textual binding with a stable id; widgets build their ``BINDINGS``
from this table (:func:`bindings_for`) so the help screen (F1) lists exactly what is bound.
Users remap keys in ``config.toml`` under ``[tui.keys]`` as ``binding id = "key[,key...]"``;
:func:`keymap_from_settings` validates that table and the App applies it with Textual's
``set_keymap`` at start-up. Keys handled by Textual itself (the command palette) are listed here
too, marked ``builtin``, so the help screen is complete.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from textual.binding import Binding, BindingType


class KeyScope(StrEnum):
    APP = "app"
    INPUT = "input"
    CHAT = "chat"
    TOOL_BLOCK = "tool block"
    APPROVAL = "approval"
    PICKER = "picker"


@dataclass(frozen=True, slots=True)
class KeySpec:
    id: str
    key: str  # default key(s), comma-separated, Textual names
    action: str
    description: str
    scope: KeyScope
    show: bool = False
    priority: bool = False
    builtin: bool = False  # bound by Textual itself; listed for the help screen only
    in_widget: bool = False  # read by the widget's key handler (remappable), not a Binding


KEYS: tuple[KeySpec, ...] = (
    # The whole app.
    KeySpec("quit", "ctrl+q", "quit", "Quit agentsh", KeyScope.APP, show=True, priority=True),
    KeySpec("help", "f1", "show_help", "Show every key binding", KeyScope.APP, show=True),
    KeySpec(
        "command_palette",
        "ctrl+p",
        "command_palette",
        "Command palette",
        KeyScope.APP,
        builtin=True,
    ),
    KeySpec("cancel", "escape", "cancel_turn", "Cancel the running turn", KeyScope.APP),
    KeySpec(
        "toggle_tool",
        "ctrl+o",
        "toggle_last_tool",
        "Expand/collapse the last tool block",
        KeyScope.APP,
    ),
    KeySpec("focus_input", "ctrl+l", "focus_input", "Focus the message editor", KeyScope.APP),
    KeySpec(
        "focus_chat", "ctrl+up", "focus_chat", "Focus the chat (walk tool blocks)", KeyScope.APP
    ),
    # Priority: the editor would otherwise take PgUp/PgDn for its own (rarely long) text.
    KeySpec(
        "page_up",
        "pageup",
        "chat_page_up",
        "Scroll the chat up a page",
        KeyScope.APP,
        priority=True,
    ),
    KeySpec(
        "page_down",
        "pagedown",
        "chat_page_down",
        "Scroll the chat down a page",
        KeyScope.APP,
        priority=True,
    ),
    # The message editor.
    KeySpec(
        "submit",
        "enter",
        "submit",
        "Send (queued while a turn runs)",
        KeyScope.INPUT,
        in_widget=True,
    ),
    KeySpec("newline", "shift+enter,ctrl+j", "newline", "New line", KeyScope.INPUT, in_widget=True),
    KeySpec(
        "history_prev",
        "up",
        "cursor_up",
        "Previous message (on the first line)",
        KeyScope.INPUT,
        builtin=True,
    ),
    KeySpec(
        "history_next",
        "down",
        "cursor_down",
        "Next message (on the last line)",
        KeyScope.INPUT,
        builtin=True,
    ),
    KeySpec(
        "complete",
        "tab",
        "complete",
        "Accept the highlighted completion",
        KeyScope.INPUT,
        in_widget=True,
    ),
    # The chat.
    KeySpec("chat_next", "down,j", "focus_next_block", "Next tool block", KeyScope.CHAT),
    KeySpec("chat_prev", "up,k", "focus_previous_block", "Previous tool block", KeyScope.CHAT),
    # A focused tool block.
    KeySpec(
        "toggle_block",
        "enter,space",
        "toggle_expand",
        "Expand/collapse this tool block",
        KeyScope.TOOL_BLOCK,
    ),
    # An approval prompt.
    KeySpec("approve_once", "y", "decide('allow_once')", "Allow once", KeyScope.APPROVAL),
    KeySpec(
        "approve_session",
        "a",
        "decide('allow_session')",
        "Allow for this session",
        KeyScope.APPROVAL,
    ),
    KeySpec("deny", "n", "decide('deny')", "Deny", KeyScope.APPROVAL),
    # Pickers (/theme, /resume, /model).
    KeySpec(
        "picker_close", "escape", "close", "Close the picker (keep the old choice)", KeyScope.PICKER
    ),
)

_BY_ID = {spec.id: spec for spec in KEYS}


def spec(binding_id: str) -> KeySpec:
    return _BY_ID[binding_id]


def bindings_for(scope: KeyScope) -> list[BindingType]:
    """The Textual bindings of one scope (builtin entries excluded)."""
    return [
        Binding(
            s.key,
            s.action,
            s.description,
            show=s.show,
            priority=s.priority,
            id=s.id,
        )
        for s in KEYS
        if s.scope is scope and not s.builtin and not s.in_widget
    ]


@dataclass(frozen=True, slots=True)
class KeymapResult:
    keymap: dict[str, str]
    problems: tuple[str, ...]


_KEY_TOKEN = re.compile(r"^[a-z0-9_+-]+$|^.$")


def keymap_from_settings(keys: Mapping[str, str]) -> KeymapResult:
    """Validate ``tui.keys`` (binding id -> keys); unknown ids and odd keys are reported."""
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in keys.items():
        target = _BY_ID.get(binding_id)
        if target is None:
            known = ", ".join(s.id for s in KEYS if not s.builtin)
            problems.append(f"tui.keys.{binding_id}: unknown binding (known: {known})")
            continue
        if target.builtin:
            problems.append(f"tui.keys.{binding_id}: this key is fixed and cannot be remapped")
            continue
        tokens = [t.strip() for t in value.split(",") if t.strip()]
        if not tokens or not all(_KEY_TOKEN.match(t.lower()) for t in tokens):
            problems.append(f'tui.keys.{binding_id}: {value!r} is not a key such as "ctrl+k"')
            continue
        keymap[binding_id] = ",".join(t.lower() if len(t) > 1 else t for t in tokens)
    return KeymapResult(keymap, tuple(problems))


def effective_key(key_spec: KeySpec, keymap: Mapping[str, str]) -> str:
    return keymap.get(key_spec.id, key_spec.key)


def display_key(keys: str) -> str:
    """``"shift+enter,ctrl+j"`` -> ``"Shift+Enter / Ctrl+J"`` for people."""
    out: list[str] = []
    for key in keys.split(","):
        parts = [p for p in key.strip().split("+") if p]
        names = [
            _NAMES.get(p, p if len(p) == 1 and len(parts) == 1 else p.capitalize()) for p in parts
        ]
        out.append("+".join(names))
    return " / ".join(out)


_NAMES = {
    "escape": "Esc",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "ctrl": "Ctrl",
    "shift": "Shift",
    "alt": "Alt",
    "enter": "Enter",
    "space": "Space",
    "tab": "Tab",
}
