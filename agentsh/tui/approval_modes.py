"""The approval mode as the TUI cycles it (Shift+Tab in the editor) and shows it (the status bar).

As in Claude Code: ask, accept edits, plan (read only), and back to ask; a mode the session
started in that is none of these (``--approve all``) joins the cycle, so it can be come back to,
and is never entered otherwise. The agent holds the mode (``AgentAPI.set_approval_mode``); this
module only decides the next one and its words.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.config import ApprovalMode


@dataclass(frozen=True, slots=True)
class Mode:
    approval: ApprovalMode
    plan: bool = False

    @property
    def label(self) -> str:
        """What the status bar says ("" for ask: nothing to say)."""
        if self.plan:
            return "⏸ plan mode (read only)"
        return {
            ApprovalMode.EDITS: "⏵⏵ accept edits",
            ApprovalMode.ALL: "⚠ allow all",
        }.get(self.approval, "")

    @property
    def style(self) -> str:
        if self.plan:
            return "bold $accent"
        return "bold $error" if self.approval is ApprovalMode.ALL else "bold $warning"


CYCLE = (Mode(ApprovalMode.ASK), Mode(ApprovalMode.EDITS), Mode(ApprovalMode.ASK, plan=True))


def next_mode(current: Mode, started: Mode) -> Mode:
    """The mode after ``current`` in the cycle (with ``started`` in it when it is not)."""
    cycle = CYCLE if started in CYCLE else (*CYCLE, started)
    index = cycle.index(current) if current in cycle else -1
    return cycle[(index + 1) % len(cycle)]
