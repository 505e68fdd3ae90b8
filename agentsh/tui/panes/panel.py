"""The side panel: Memory, Summaries and Tree as tabs to the right of the chat.

Hidden until first asked for (F2 / F3 / F4, the command palette, ``/tree`` or Esc Esc), so the
first frame pays nothing for it: the tabs and the tree are built, hidden, once a session is
open, and the other panes the first time their tab shows (the memory pane reads files). A pane
key toggles: it opens the panel on that tab, switches to that tab when another one shows, and
closes the panel when its tab already shows. On a wide terminal the panel sits beside the chat
(40% of the width, 36 to 72 columns); on a narrow one (under :data:`WIDE_COLUMNS`) it takes the
chat's place until it closes, so 80x24 stays usable. The App sets the width classes
(``HORIZONTAL_BREAKPOINTS``); the layout rules are in agentsh.tcss.

Panes keep themselves current: when the session's path changes (the controller's
``path_changed`` signal) the visible pane is refreshed and the others are refreshed when next
shown, through their ``refresh_content()`` method.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING

from textual.containers import Vertical
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.app import RenderResult
    from textual.widgets import TabbedContent, TabPane
    from textual.worker import WorkType

    from agentsh.tui.pane_host import PaneHost

WIDE_COLUMNS = 100  # from this width on, the panel sits beside the chat instead of over it


class PaneName(StrEnum):
    MEMORY = "memory"
    SUMMARIES = "summaries"
    TREE = "tree"

    @property
    def label(self) -> str:
        return self.value.capitalize()

    @property
    def tab_id(self) -> str:
        return f"tab-{self.value}"


def _build_pane(name: PaneName, host: PaneHost) -> Widget:
    # Imported when the panel first opens: the panes' modules are not on the first-frame path.
    match name:
        case PaneName.MEMORY:
            from agentsh.tui.panes.memory_pane import MemoryPane

            return MemoryPane(host)
        case PaneName.SUMMARIES:
            from agentsh.tui.panes.summaries import SummariesPane

            return SummariesPane(host)
        case PaneName.TREE:
            from agentsh.tui.panes.tree_pane import TreePane

            return TreePane(host, id="tree-pane")


class SidePanel(Vertical):
    def __init__(self, host: PaneHost, *, id: str | None = "side-panel") -> None:
        super().__init__(id=id)
        self.host = host
        self._tabs: TabbedContent | None = None
        self._panes: dict[PaneName, Widget] = {}
        self._stale: set[PaneName] = set()
        #: opened for one visit (Esc Esc, /tree): leaving the pane closes the panel again
        self.transient = False
        self._open = False
        self._building = asyncio.Lock()
        self._prebuilt = False

    def on_mount(self) -> None:
        self.host.path_changed.subscribe(self, self._path_changed)

    # -- state --------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def active(self) -> PaneName | None:
        if self._tabs is None or not self.is_open:
            return None
        active = self._tabs.active.removeprefix("tab-")
        return PaneName(active) if active in PaneName._value2member_map_ else None

    @property
    def overlays_chat(self) -> bool:
        """True on a narrow terminal, where the open panel takes the chat's place."""
        return self.app.size.width < WIDE_COLUMNS

    def pane(self, name: PaneName) -> Widget | None:
        return self._panes.get(name)

    # -- opening and closing -------------------------------------------------------------------

    async def show(self, name: PaneName, *, focus: bool = True, transient: bool = False) -> Widget:
        """Open the panel on ``name`` (building the tabs the first time) and return its pane."""
        await self._build()
        assert self._tabs is not None
        if not self.is_open:
            self.transient = transient
        # The pane and its tab first, then the panel: opened first, it would show the tab
        # that was active (an empty one) until the pane is built.
        pane = await self._ensure_pane(name)
        focused = self.app.focused
        if focus and focused is not None and self in focused.ancestors:
            # Let go of the pane being hidden first: its focused widget, hidden by the
            # switch, gave the focus to a hidden sibling after the new pane took it (F2 then
            # F3 left nothing focused, and Esc deaf, with the chat replaced by the panel).
            self.screen.set_focus(None)
        self._tabs.active = name.tab_id
        self._set_open(True)
        if name in self._stale:
            self._stale.discard(name)
            _refresh(pane)
        if focus:
            self.call_after_refresh(_focus_pane, pane)
        return pane

    def hide(self) -> None:
        self._set_open(False)
        self.transient = False

    async def toggle(self, name: PaneName) -> bool:
        """The pane key: open on ``name``, or close when it already shows. True when open."""
        if self.is_open and self.active is name:
            self.hide()
            return False
        await self.show(name)
        return True

    def _set_open(self, shown: bool) -> None:
        # Display is set on the widgets, not through a class on a shared ancestor: a class
        # change restyles every node below it, and the transcript has hundreds.
        self._open = shown
        self.display = shown
        self._place_chat()

    def _place_chat(self) -> None:
        """On a narrow terminal the open panel hides the rest of its row (the chat column)."""
        hide = self._open and self.overlays_chat
        if self.parent is None:
            return
        hidden = [s for s in self.parent.children if s is not self and s.display == hide]
        for sibling in hidden:
            sibling.display = not hide
        focused = self.app.focused
        if hide and focused is not None and any(s in focused.ancestors_with_self for s in hidden):
            # The terminal narrowed under an open panel: the focus was in the chat column
            # (the editor), now hidden, where Esc went unheard and typing went unseen.
            active = self.active
            pane = self._panes.get(active) if active is not None else None
            if pane is not None:
                self.screen.set_focus(None)
                self.call_after_refresh(_focus_pane, pane)

    def on_resize(self) -> None:
        self._place_chat()  # the terminal crossed WIDE_COLUMNS while the panel was open

    async def _build(self) -> None:
        """The tabs (once; a key press may race the idle-time build)."""
        async with self._building:
            if self._tabs is not None:
                return
            from textual.widgets import TabbedContent  # not on the first-frame path

            tabs = TabbedContent(id="side-tabs")
            await self.mount(tabs)
            for name in PaneName:
                await tabs.add_pane(_blank_tab_pane()(name.label, id=name.tab_id))
            self._tabs = tabs

    async def _ensure_pane(self, name: PaneName) -> Widget:
        """The pane of a tab, mounted the first time the tab shows."""
        async with self._building:
            pane = self._panes.get(name)
            if pane is None:
                assert self._tabs is not None
                pane = _build_pane(name, self.host)
                self._panes[name] = pane
                await self._tabs.get_pane(name.tab_id).mount(pane)
            return pane

    async def _prebuild(self) -> None:
        """Once a session is open, build the (hidden) tabs and the tree while the user reads,
        so the first F4 or Esc Esc only has to show them. The memory pane stays lazy: it
        reads files and the search index."""
        if not self.is_mounted:
            return
        await self._build()
        await self._ensure_pane(PaneName.TREE)

    # -- keeping panes current -----------------------------------------------------------------

    def _path_changed(self, _reason: str) -> None:
        if not self._prebuilt:
            self._prebuilt = True
            prebuild: WorkType[None] = self._prebuild  # a function: never an unawaited coroutine
            self.call_after_refresh(
                lambda: self.run_worker(prebuild, group="panel", exit_on_error=False)
            )
        active = self.active
        for name, pane in self._panes.items():
            if name is active:
                _refresh(pane)
            else:
                self._stale.add(name)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab chosen with the mouse: build its pane, or bring it up to date."""
        active = self.active
        if active is None:
            return
        if active not in self._panes:
            await self._ensure_pane(active)
        elif active in self._stale:
            self._stale.discard(active)
            _refresh(self._panes[active])


@cache
def _blank_tab_pane() -> type[TabPane]:
    from textual.widgets import TabPane

    class BlankTabPane(TabPane):
        """A tab whose pane is not built yet shows nothing (an empty container would show
        its CSS identifier, ``TabPane#tab-memory``, while a mouse-chosen pane is built)."""

        def render(self) -> RenderResult:
            return ""

    return BlankTabPane


def _refresh(pane: Widget) -> None:
    refresh = getattr(pane, "refresh_content", None)
    if callable(refresh) and pane.is_mounted:
        refresh()


def _focus_pane(pane: Widget) -> None:
    """Focus the pane's own focus target, else its first focusable widget."""
    target = getattr(pane, "focus_target", None)
    if callable(target):
        target()
        return
    for widget in pane.query("*"):
        if widget.focusable:
            widget.focus()
            return
