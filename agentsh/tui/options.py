"""What the command line asked the TUI to do, as one frozen value.

:func:`LaunchOptions.from_args` reads the argparse namespace that ``agentsh.cli`` builds; the
App and the controller take this value instead of the namespace, so tests can construct it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentsh.config import ApprovalMode
from agentsh.config_settings import PERMISSION_MODES
from agentsh.run_options import RunExtras

if TYPE_CHECKING:
    from agentsh.tools.rules import ToolRules


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    continue_session: bool = False
    resume: str | None = None  # None: no resume; "": show the picker; else an id prefix
    session: str | None = None
    no_session: bool = False
    model: str | None = None
    api_base: str | None = None
    approval: ApprovalMode | None = None
    allowed_tools: tuple[str, ...] = ()  # --allowedTools rules: run without asking
    disallowed_tools: tuple[str, ...] = ()  # --disallowedTools rules: always refused
    name: str | None = None  # --name: names the session opened
    session_id: str | None = None  # --session-id: the id of the new session (or of the copy)
    fork_session: bool = False  # --fork-session: continue -c/-r/--session's in a copy
    plan: bool = False  # --permission-mode plan: reads only
    appended_prompt: str = ""  # --append-system-prompt
    system_prompt: str = ""  # --system-prompt: replaces agentsh's base instructions
    extras: RunExtras = field(
        default_factory=RunExtras
    )  # --add-dir, --mcp-config, --settings (run_options)
    typed_ahead: str = ""  # typed before the trust question could be answered: in the editor

    @classmethod
    def from_args(cls, args: argparse.Namespace, extras: RunExtras | None = None) -> LaunchOptions:
        """The options; a ValueError when --approve and --permission-mode are both given."""
        approve = getattr(args, "approve", None)
        permission = getattr(args, "permission_mode", None)
        if approve and permission:
            raise ValueError("--approve and --permission-mode cannot be used together")
        return cls(
            continue_session=bool(getattr(args, "continue_session", False)),
            resume=getattr(args, "resume", None),
            session=getattr(args, "session", None),
            no_session=bool(getattr(args, "no_session", False)),
            model=getattr(args, "model", None),
            api_base=getattr(args, "api_base", None),
            approval=ApprovalMode(approve) if approve else PERMISSION_MODES.get(permission or ""),
            allowed_tools=tuple(getattr(args, "allowed_tools", None) or ()),
            disallowed_tools=tuple(getattr(args, "disallowed_tools", None) or ()),
            name=getattr(args, "name", None),
            session_id=getattr(args, "session_id", None),
            fork_session=bool(getattr(args, "fork_session", False)),
            plan=permission == "plan",
            appended_prompt=getattr(args, "append_system_prompt", None) or "",
            system_prompt=getattr(args, "system_prompt", None) or "",
            extras=extras or RunExtras(),
        )

    def tool_rules(self) -> ToolRules:
        """The rule flags as the approver takes them (RuleError for a malformed rule:
        ``launch`` checks them before the first frame)."""
        from agentsh.tools.rules import ToolRules

        return ToolRules.parse(self.allowed_tools, self.disallowed_tools)

    @property
    def wants_picker(self) -> bool:
        return self.resume == ""

    def namespace(self) -> argparse.Namespace:
        """The options as the argparse namespace :func:`agentsh.startup.session_for_args`
        reads, so the TUI opens a session exactly as ``-p`` does. The TUI never forks a
        locked session on its own: it shows it read-only and ``/fork`` continues it."""
        return argparse.Namespace(
            continue_session=self.continue_session,
            resume=self.resume,
            session=self.session,
            no_session=self.no_session,
            fork=False,
            name=self.name,
            session_id=self.session_id,
            fork_session=self.fork_session,
        )
