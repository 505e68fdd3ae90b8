"""What is open now: the session, the agent once it has loaded, and whether work is running.

One small object the parts of the TUI share instead of holding each other: the session
lifecycle fills it, turns and branching read and mark it, the side panes see it as their
:class:`~agentsh.tui.pane_host.PaneHost`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.signal import Signal

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from agentsh.config import Environment
    from agentsh.frontend import InteractiveAPI
    from agentsh.session.session import Session
    from agentsh.tui.options import LaunchOptions


class Current:
    def __init__(
        self, owner: DOMNode, env: Environment, options: LaunchOptions, cwd: Path | None = None
    ) -> None:
        self.env = env
        self.options = options
        self.cwd = cwd or Path.cwd()
        self.agent: InteractiveAPI | None = None
        self.session: Session | None = None  # opened before the agent has loaded
        self.agent_failed = ""  # why the agent could not start (then nothing can be sent)
        #: a turn, a compaction or a branch summary is running: messages queue, the leaf
        #: stays where it is
        self.turn_running = False
        # Published whenever the session's path may have changed (a turn, a compaction, an
        # undo, a session switch); the side panes subscribe. The data says why.
        self.path_changed: Signal[str] = Signal(owner, "path-changed")
        #: an MCP server started, failed, stopped or was switched on or off (``/mcp`` follows)
        self.mcp_changed: Signal[str] = Signal(owner, "mcp-changed")

    @property
    def ready(self) -> bool:
        return self.agent is not None

    def current_session(self) -> Session | None:
        return self.agent.session if self.agent is not None else self.session

    def sessions_dir(self) -> Path:
        return self.env.user.project_sessions_dir(self.env.project.root)
