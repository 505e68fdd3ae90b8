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
    TREE = "tree pane"
    BRANCH_SUMMARY = "branch summary question"
    RESTORE_FILES = "restore files question"
    MEMORY_PANE = "memory pane"
    SUMMARIES_PANE = "summaries pane"


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
    KeySpec(
        "cancel",
        "escape",
        "cancel_turn",
        "Cancel the running turn (else from the chat or a pane, back to the editor; "
        "from the editor, close the side pane)",
        KeyScope.APP,
    ),
    KeySpec(
        "interrupt",
        "ctrl+c",
        "interrupt",
        "Cancel the running turn, else clear the editor, else (pressed twice) quit; "
        "copies selected text instead",
        KeyScope.APP,
        priority=True,
    ),
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
    # The side panel and branching (work from anywhere but the pane that owns the key).
    KeySpec(
        "toggle_memory", "f2", "toggle_pane('memory')", "Show/hide the memory pane", KeyScope.APP
    ),
    KeySpec(
        "toggle_summaries",
        "f3",
        "toggle_pane('summaries')",
        "Show/hide the summaries pane",
        KeyScope.APP,
    ),
    KeySpec("toggle_tree", "f4", "toggle_pane('tree')", "Show/hide the tree pane", KeyScope.APP),
    KeySpec(
        "select_prev_message",
        "alt+up",
        "select_message(-1)",
        "Select the previous user message (Enter edits it as a new branch)",
        KeyScope.APP,
    ),
    KeySpec(
        "select_next_message",
        "alt+down",
        "select_message(1)",
        "Select the next user message",
        KeyScope.APP,
    ),
    KeySpec(
        "branch_prev",
        "alt+left",
        "switch_branch(-1)",
        "Previous sibling branch at the nearest fork",
        KeyScope.APP,
    ),
    KeySpec(
        "branch_next",
        "alt+right",
        "switch_branch(1)",
        "Next sibling branch at the nearest fork",
        KeyScope.APP,
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
        "Accept the highlighted completion (the first if none is)",
        KeyScope.INPUT,
        in_widget=True,
    ),
    KeySpec(
        "cycle_mode",
        "shift+tab",
        "cycle_mode",
        "Approval mode: ask, accept edits, plan (read only), and back",
        KeyScope.INPUT,
        in_widget=True,
    ),
    # The chat.
    KeySpec("chat_next", "down,j", "focus_next_block", "Next tool block", KeyScope.CHAT),
    KeySpec("chat_prev", "up,k", "focus_previous_block", "Previous tool block", KeyScope.CHAT),
    KeySpec(
        "edit_message",
        "enter",
        "edit_selected",
        "Edit the selected message: its text goes to the editor, sending makes a new branch",
        KeyScope.CHAT,
    ),
    KeySpec(
        "clear_selection", "escape", "clear_selection", "Clear the message selection", KeyScope.CHAT
    ),
    # A focused tool block.
    KeySpec(
        "toggle_block",
        "enter,space",
        "toggle_expand",
        "Expand/collapse this tool block (or long message)",
        KeyScope.TOOL_BLOCK,
    ),
    # An approval prompt.
    KeySpec("approve_once", "y", "decide('allow_once')", "Allow once", KeyScope.APPROVAL),
    KeySpec(
        "approve_session",
        "a",
        "decide('allow_session')",
        "Allow every call of that tool for this session (every command, every edit, ...)",
        KeyScope.APPROVAL,
    ),
    KeySpec(
        "approve_group",
        "s",
        "decide('allow_group')",
        "Allow every tool of its MCP server for this session",
        KeyScope.APPROVAL,
    ),
    KeySpec("deny", "n", "decide('deny')", "Deny", KeyScope.APPROVAL),
    KeySpec(
        "approval_scroll_up",
        "up,k",
        "scroll_detail(-1)",
        "Scroll the command or diff up",
        KeyScope.APPROVAL,
    ),
    KeySpec(
        "approval_scroll_down",
        "down,j",
        "scroll_detail(1)",
        "Scroll the command or diff down",
        KeyScope.APPROVAL,
    ),
    # Pickers (/theme, /resume, /model).
    KeySpec(
        "picker_close", "escape", "close", "Close the picker (keep the old choice)", KeyScope.PICKER
    ),
    # The tree pane (typing searches; these keys do the rest).
    KeySpec("tree_up", "up", "cursor_up", "Previous entry", KeyScope.TREE),
    KeySpec("tree_down", "down", "cursor_down", "Next entry", KeyScope.TREE),
    KeySpec("tree_page_up", "pageup", "page_up", "Page up", KeyScope.TREE),
    KeySpec("tree_page_down", "pagedown", "page_down", "Page down", KeyScope.TREE),
    KeySpec("tree_first", "home", "first", "First entry", KeyScope.TREE),
    KeySpec("tree_last", "end", "last", "Last entry", KeyScope.TREE),
    KeySpec(
        "tree_choose",
        "enter",
        "choose",
        "Go there (moves the leaf; a user message goes to the editor instead)",
        KeyScope.TREE,
    ),
    KeySpec(
        "tree_fold",
        "left",
        "fold",
        "Fold the fork here (else jump to the fork above)",
        KeyScope.TREE,
    ),
    KeySpec(
        "tree_unfold",
        "right",
        "unfold",
        "Unfold the fork here (else jump to the next fork)",
        KeyScope.TREE,
    ),
    KeySpec(
        "tree_label",
        "l,L",
        "label",
        "Label the entry (empty clears; l starts a search once one is typed, L always labels)",
        KeyScope.TREE,
        in_widget=True,
    ),
    KeySpec(
        "tree_filter_default",
        "ctrl+d",
        "set_filter('default')",
        "Filter: default (no model changes or tool-call-only replies)",
        KeyScope.TREE,
    ),
    KeySpec(
        "tree_filter_no_tools",
        "ctrl+t",
        "set_filter('no tools')",
        "Filter: no tool results",
        KeyScope.TREE,
    ),
    KeySpec(
        "tree_filter_user", "ctrl+u", "set_filter('user only')", "Filter: user only", KeyScope.TREE
    ),
    KeySpec(
        "tree_filter_labelled",
        "ctrl+l",
        "set_filter('labelled')",
        "Filter: labelled entries",
        KeyScope.TREE,
    ),
    KeySpec("tree_filter_all", "ctrl+a", "set_filter('all')", "Filter: everything", KeyScope.TREE),
    KeySpec("tree_filter_cycle", "ctrl+o", "cycle_filter", "Next filter", KeyScope.TREE),
    KeySpec(
        "tree_close", "escape", "close", "Clear the search, else leave the tree", KeyScope.TREE
    ),
    # The question asked when the leaf leaves a branch.
    KeySpec(
        "summary_no", "n,enter", "answer('no')", "Leave without a summary", KeyScope.BRANCH_SUMMARY
    ),
    KeySpec(
        "summary_yes",
        "y",
        "answer('yes')",
        "Attach a summary of the branch left",
        KeyScope.BRANCH_SUMMARY,
    ),
    KeySpec(
        "summary_instructions",
        "i",
        "answer('instructions')",
        "Attach a summary, with instructions for it",
        KeyScope.BRANCH_SUMMARY,
    ),
    KeySpec(
        "summary_cancel",
        "escape",
        "answer('cancel')",
        "Stay on this branch",
        KeyScope.BRANCH_SUMMARY,
    ),
    # The question asked when the leaf moves to a point whose files differ from the disk.
    KeySpec("restore_yes", "y", "answer('yes')", "Restore the files", KeyScope.RESTORE_FILES),
    KeySpec(
        "restore_no",
        "n,enter,escape",
        "answer('no')",
        "Keep the files as they are",
        KeyScope.RESTORE_FILES,
    ),
    KeySpec("restore_diff", "d", "diff", "Show / hide the diff", KeyScope.RESTORE_FILES),
    # The memory pane (the list: Up/Down move, Enter opens the entry, doc or result).
    KeySpec("memory_search", "slash", "focus_search", "Search memory", KeyScope.MEMORY_PANE),
    KeySpec(
        "memory_open",
        "enter",
        "select",
        "Open the file, entry, doc or search result (Esc closes it)",
        KeyScope.MEMORY_PANE,
        builtin=True,
    ),
    KeySpec(
        "memory_clear",
        "escape",
        "clear_search",
        "In the search box: clear the search",
        KeyScope.MEMORY_PANE,
        builtin=True,
    ),
    # The summaries pane (one row per compaction on the current branch).
    KeySpec(
        "summaries_read",
        "enter",
        "select",
        "Read the summary or the archive",
        KeyScope.SUMMARIES_PANE,
        builtin=True,
    ),
    KeySpec(
        "summaries_jump",
        "g",
        "jump",
        "Jump the chat to the first entry the compaction kept",
        KeyScope.SUMMARIES_PANE,
    ),
    KeySpec(
        "summaries_archived",
        "e",
        "toggle_archived",
        "Show/hide the archived turns in the chat",
        KeyScope.SUMMARIES_PANE,
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
    "slash": "/",
}
