"""``/mcp``: the MCP servers in a window over the app, kept current while it shows.

One row per server (its state, its tools, what their definitions cost); below the rows, the
highlighted server's tools and how it is started. ``e`` enables, ``d`` disables and ``r``
restarts the highlighted server for this session; Esc closes. The rows follow the servers as
they start, fail and come back (the ``changed`` signal the session lifecycle publishes from
the agent's MCP watch). Everything shown goes through :mod:`agentsh.mcp.report`, which cleans
what came from a config file or a server of control characters, and it is shown as plain text
(never Markdown: a server's link would be a link here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agentsh.mcp import report

if TYPE_CHECKING:
    from textual.signal import Signal

    from agentsh.frontend import McpAPI


class McpServersScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="mcp_close"),
        Binding("e", "set_enabled(True)", "Enable", id="mcp_enable"),
        Binding("d", "set_enabled(False)", "Disable", id="mcp_disable"),
        Binding("r", "restart", "Restart", id="mcp_restart"),
    ]
    DEFAULT_CSS = """
    McpServersScreen { align: center middle; background: $background 60%; }
    McpServersScreen > #mcp-frame {
        width: 100%; max-width: 110; height: 100%; max-height: 40;
        background: $surface; border: round $primary; padding: 0 1;
    }
    McpServersScreen #mcp-title { text-style: bold; color: $primary; }
    McpServersScreen #mcp-list { height: auto; max-height: 12; border: none; }
    McpServersScreen #mcp-budget { color: $text-muted; margin: 1 0 0 0; }
    McpServersScreen #mcp-detail { height: 1fr; margin: 1 0 0 0; scrollbar-size-vertical: 1; }
    McpServersScreen #mcp-footer { color: $text-muted; height: 1; }
    """

    def __init__(self, control: McpAPI, changed: Signal[str] | None = None) -> None:
        super().__init__()
        self.control = control
        self.changed = changed
        self.names: list[str] = []
        self.overview = control.mcp_overview()

    def compose(self) -> ComposeResult:
        with Vertical(id="mcp-frame"):
            yield Static(Content("MCP servers"), id="mcp-title")
            yield OptionList(id="mcp-list")
            yield Static(id="mcp-budget")
            with VerticalScroll(id="mcp-detail"):
                yield Static(id="mcp-tools")  # plain text: the server wrote it
            yield Static(
                Content("↑↓ server · e enable · d disable · r restart · Esc close"),
                id="mcp-footer",
            )

    def on_mount(self) -> None:
        if self.changed is not None:
            self.changed.subscribe(self, self._changed)
        self._fill()
        self.query_one(OptionList).focus()

    def _changed(self, _why: str) -> None:
        self.overview = self.control.mcp_overview()
        self._fill()

    @property
    def selected(self) -> str | None:
        index = self.query_one(OptionList).highlighted
        return self.names[index] if index is not None and index < len(self.names) else None

    def _fill(self) -> None:
        """The rows again from :attr:`overview`; the highlighted server stays highlighted."""
        keep = self.selected if self.names else None
        options = self.query_one(OptionList)
        options.clear_options()
        overview = self.overview
        self.names = [status.name for status in overview.servers]
        left_out = report.untrusted_text(overview)
        if not self.names:
            options.add_option(Option(Content.styled("no MCP servers", "italic"), disabled=True))
            self.query_one("#mcp-budget", Static).update(Content(left_out))
            self._show_tools()
            return
        options.add_options([Option(Content(row)) for row in report.server_rows(overview)])
        options.highlighted = self.names.index(keep) if keep in self.names else 0
        budget = report.budget_text(overview) + (f"\n{left_out}" if left_out else "")
        self.query_one("#mcp-budget", Static).update(Content(budget))
        self._show_tools()

    @on(OptionList.OptionHighlighted, "#mcp-list")
    def _show_tools(self) -> None:
        name = self.selected
        status = next((s for s in self.overview.servers if s.name == name), None)
        if status is None:
            text = (
                "" if self.names or self.overview.untrusted else report.overview_text(self.overview)
            )
        else:
            text = report.server_text(status, self.overview.tokens.get(status.name, 0))
        self.query_one("#mcp-tools", Static).update(Content(text))

    def action_set_enabled(self, enabled: bool) -> None:
        self._act(enabled)

    def action_restart(self) -> None:
        self._act(None)

    def _act(self, enabled: bool | None) -> None:
        name = self.selected
        if name is None:
            return
        if enabled is None and (problem := report.restart_refusal(self.overview, name)):
            self.notify(problem, severity="warning")
            return
        try:
            self.control.set_mcp_server(name, enabled=enabled)
        except KeyError:
            return
        self.overview = self.control.mcp_overview()
        self._fill()
