"""The approval policy: which tool calls run at once and which wait for the user (SPEC §3).

Reads inside the project, the ``--add-dir`` folders and agentsh's saved tool output never ask;
a read by a path outside them (``read ~/.ssh/id_ed25519`` after an injection in a repository
file) asks, as in Claude Code, with "allow this folder for the session" as the sticky answer,
and is denied with ``-p`` unless an allow rule covers it or the mode is ``all`` (a deviation from
SPEC §3, where reads never ask). In ``ask`` mode edits and commands ask; ``edits`` lets edits
inside the project root through and still asks for commands; ``all`` lets everything through.
Rules stand above the modes: a write whose target lies outside the project root (after
resolving symlinks and ``..``) or has more than one hard link always asks, and "allow for this
session" never covers it. So
does a write to a *protected* path: the project's ``.agentsh/config.toml`` (it holds
``tools.approval``, and an agent allowed to edit files must not grant itself commands), its
``.mcp.json`` (the servers it lists are programs the next run starts) and
anything under a ``.git`` folder (its config and hooks name programs that git, and so every
later ``git status`` of the user's, runs). The memory tool never asks, but its writes pass the
same outside-the-project check and are refused when it fails; its changes to the user's
USER.md, which every project's sessions read, ask (denied with ``-p``) unless the mode is
``all`` or an allow rule names the tool (:meth:`Tool.shared_target`). An allow rule that names
commands (``Bash(git:*)``) does not cover a git command in a repository that carries programs
for git to run (hooks, program-naming settings: :mod:`agentsh.tools.git_armed`): it asks,
naming them, unless they are the project's, as the user trusted them with the folder. Asking
is an
:class:`~agentsh.events.ApprovalRequest` emitted through the tool context; the front end
resolves its ``decision`` future. With nobody to ask (headless ``-p``), a call that would ask is
denied with a message telling the model why and how the user can allow it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentsh.config import ApprovalMode
from agentsh.config_settings import PERMISSION_MODES as PERMISSION_MODES  # beside ApprovalMode
from agentsh.errors import AgentshError
from agentsh.events import ApprovalDecision, ApprovalRequest
from agentsh.tools.base import Effect, Tool, ToolArgumentError, ToolContext, ToolError
from agentsh.tools.git_armed import armed_programs, git_folders
from agentsh.tools.headless_denial import (
    armed_git_denial,
    headless_denial,
    outside_write_denial,
    protected_denial,
    read_outside_denial,
    shared_denial,
)
from agentsh.tools.protected import git_settings_reason, protected_reason
from agentsh.tools.reach import Reach
from agentsh.tools.rules import ToolRule, ToolRules, command_parts

PLAN_INSTRUCTIONS = (
    "# Plan mode\n\nThis run is in plan mode: investigate with the reading tools and answer "
    "with a plan. Files cannot be changed and commands cannot be run; calls that would do "
    "either are refused."
)


def appended_instructions(appended: str, plan: bool) -> str:
    """What goes at the end of the system prompt: ``--append-system-prompt``'s text, then the
    plan-mode rules when ``plan``."""
    parts = [appended.strip(), PLAN_INSTRUCTIONS if plan else ""]
    return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Denial:
    """A call refused without asking anyone (Claude Code's ``permission_denials``)."""

    tool: str
    call_id: str
    params: Any
    summary: str = ""  # the call's header line, e.g. "bash: rm -rf build"
    why: str = ""  # for the user, in a few words, with how to allow it where one can


class Approver:
    """Decides, per tool call, whether it may run; asks the user through an event if needed."""

    def __init__(
        self,
        mode: ApprovalMode | str,
        project_root: Path,
        *,
        interactive: bool,
        rules: ToolRules | None = None,
        plan: bool = False,
        trusted_programs: str | None = None,
        added_dirs: Sequence[Path] = (),
        read_dirs: Sequence[Path] = (),
    ) -> None:
        self.mode = ApprovalMode(mode)
        self.reach = Reach(project_root, added=added_dirs, read=read_dirs)  # the folders
        self.project_root = self.reach.project_root
        self.interactive = interactive
        self.rules = rules or ToolRules()  # --allowedTools / --disallowedTools (tools/rules.py)
        self.plan = plan  # plan mode: nothing but reads, whatever the mode or the rules say
        # The digest of the project repository's hooks and settings the user trusted with the
        # folder (git_armed.trusted_programs): allow rules cover exactly those.
        self.trusted_programs = trusted_programs
        self.denials: list[Denial] = []  # what was refused without asking (headless reports)
        self._session_allowed: set[str] = set()
        self._session_groups: set[str] = set()  # ApprovalDecision.ALLOW_GROUP keys
        self._allowed_armed: set[str] = set()  # digests of repositories' programs allowed

    @property
    def session_allowed(self) -> frozenset[str]:
        """Tools the user allowed for the rest of the session."""
        return frozenset(self._session_allowed)

    def forget_session(self) -> None:
        self._session_allowed.clear()
        self._session_groups.clear()
        self._allowed_armed.clear()
        self.reach.forget_session()

    async def authorize(self, tool: Tool, params: Any, ctx: ToolContext) -> str | None:
        """None if the call may run; otherwise the message the model gets as an error result."""
        refusal = await self._authorize(tool, params, ctx)
        if refusal is None:
            return None
        message, why = refusal
        if not self.interactive:
            self.denials.append(Denial(tool.name, ctx.call_id, params, tool.summary(params), why))
        return message

    async def _authorize(
        self, tool: Tool, params: Any, ctx: ToolContext, *, approved: bool = False
    ) -> tuple[str, str] | None:
        """None if the call may run; else what the model is told and, for the user, why.
        ``approved``: the call's input was rewritten by the one who allowed it; that answer
        stands for the mode's question, and anything else that would ask refuses it."""
        ask = self._rewrite_refused if approved else self._ask
        verdict = self.rules.check(
            tool.name, params, ctx.cwd, self.project_root, mcp=tool.mcp_identity()
        )
        if verdict is not None and not verdict.allowed:
            why = verdict.reason
            if verdict.rule is not None:
                why = f"the user's rule {verdict.rule.text!r} (--disallowedTools) forbids it"
            return f"Denied: {tool.summary(params)}: {why}. Do not retry it; tell the user.", why
        effect = tool.effect(params, ctx)
        summary = tool.summary(params)
        shared = tool.shared_target(params, ctx)
        if shared is not None and verdict is None and self.mode is not ApprovalMode.ALL:
            # A note in USER.md enters every later session's prompt, in every project: a model
            # a hostile repository talked into it must not plant one unasked (allow rules and
            # the user's own "all" still let it through; the write guards below still apply).
            refused = await self._shared(tool, params, ctx, shared)
            if refused is not None:
                return refused
        # A tool that writes without asking (memory) stays in the project, --add-dir or not.
        reasons = self.reach.outside(tool, params, ctx, added=effect is not Effect.READ)
        outside = [path for path, _why in reasons]
        where = "; ".join(why for _path, why in reasons)
        if effect is Effect.READ:
            if not outside:
                if verdict is not None or self.mode is ApprovalMode.ALL:
                    return None  # an allow rule (Read(//etc/**)) or the user's "all"
                return await self._read_outside(tool, params, ctx, ask)
            # A tool that writes without asking (memory) never leaves the project.
            return (
                f"Denied: {summary} would write outside the project ({where}). This tool "
                "only writes inside the project; nothing was written. Tell the user if it "
                "matters."
            ), f"it would write outside the project ({where})"
        if self.plan:
            return (
                f"Denied: {tool.summary(params)}. This is plan mode: files are not changed "
                "and commands are not run. Finish the plan; the user will carry it out."
            ), "plan mode changes no file and runs no command"
        if outside:
            if not self.interactive:
                return outside_write_denial(summary, self.project_root, where)
            reason = f"it writes outside the project root ({self.project_root}): {where}"
            return _asked(await ask(tool, params, ctx, reason, outside=True))
        protected = self._protected(tool, params, ctx) or await self._hooks(tool, params, ctx)
        if protected is not None:
            if not self.interactive:
                return protected_denial(summary, protected)
            reason = f"it changes {protected}"
            return _asked(await ask(tool, params, ctx, reason, outside=False, sticky=False))
        if verdict is not None:  # an allow rule (never past the two guards above)
            found = await self._armed_git(tool, params, ctx, verdict.rule)
            if found is None:
                return None
            armed, programs = found
            rule = verdict.rule.text if verdict.rule is not None else ""
            if not self.interactive:
                return armed_git_denial(summary, armed, rule)
            reason = f"{armed}: the rule {rule} does not cover git here"
            asked = await ask(
                tool, params, ctx, reason, outside=False, sticky=False, remember=programs
            )
            return _asked(asked)
        if self.mode is ApprovalMode.ALL:
            return None
        if self.mode is ApprovalMode.EDITS and effect is Effect.EDIT:
            return None
        group = tool.approval_group()
        if tool.name in self._session_allowed or (group and group[0] in self._session_groups):
            return None
        if approved:
            return None  # the answer that rewrote the call allowed it in this mode
        what = "file edits" if effect is Effect.EDIT else "commands"
        if not self.interactive:
            mcp = tool.mcp_identity() if group else None
            return headless_denial(summary, effect, self.mode, self.rules, mcp)
        reason = f"approval mode is '{self.mode}': {what} need your approval"
        return _asked(await ask(tool, params, ctx, reason, outside=False))

    async def _shared(
        self, tool: Tool, params: Any, ctx: ToolContext, shared: str
    ) -> tuple[str, str] | None:
        """Ask about a change to what every project reads (:meth:`Tool.shared_target`); with
        ``-p`` it is denied in one line. "Allow for this session" covers this call only."""
        if not self.interactive:
            return shared_denial(tool.summary(params), shared, self.mode)
        reason = f"it changes {shared}"
        return _asked(await self._ask(tool, params, ctx, reason, outside=False, sticky=False))

    async def _read_outside(
        self, tool: Tool, params: Any, ctx: ToolContext, ask: _Ask
    ) -> tuple[str, str] | None:
        """None when every path the call reads is :meth:`Reach.readable`; otherwise the user is
        asked (never with ``-p``: denied, naming ``--add-dir``)."""
        found = self.reach.read_outside(tool, params, ctx)
        if found is None:
            return None
        real, folder = found
        if not self.interactive:
            return read_outside_denial(tool.summary(params), real, self.project_root, folder)
        reason = f"it reads outside the project root ({self.project_root}): {real}"
        return _asked(
            await ask(tool, params, ctx, reason, outside=False, sticky=False, folder=folder)
        )

    async def _armed_git(
        self, tool: Tool, params: Any, ctx: ToolContext, rule: ToolRule | None
    ) -> tuple[str, str] | None:
        """What makes git run programs in this repository, when an allow rule that names
        commands (``Bash(git:*)``) would let a git command run, and the digest of those
        programs (what "allow for this session" remembers; "": nothing to remember); None
        otherwise (see :mod:`agentsh.tools.git_armed`). Not for a bare ``Bash`` rule: that
        allows any command, those hooks included."""
        if tool.name != "bash" or rule is None or rule.specifier is None:
            return None
        parts = command_parts(getattr(params, "command", "") or "") or []
        folders = git_folders(parts, ctx.cwd)
        if folders is None:
            return "the command moves to a folder agentsh cannot follow before running git", ""
        for folder in folders:
            armed = await asyncio.to_thread(armed_programs, folder)
            if armed is None or armed.digest == self.trusted_programs:
                continue  # nothing, or what the user trusted with the folder
            if armed.digest not in self._allowed_armed:  # the same programs, not the same names
                return armed.reason(), armed.digest
        return None

    async def _hooks(self, tool: Tool, params: Any, ctx: ToolContext) -> str | None:
        """What hooks folder (``core.hooksPath`` inside the project) or other place of git's
        settings (a ``gitdir:`` folder, an included config) the call writes, in words, or
        None; git is asked only for a call that writes files."""
        targets = tool.target_paths(params, ctx)
        if not targets:
            return None
        return await asyncio.to_thread(git_settings_reason, targets, self.project_root)

    def _protected(self, tool: Tool, params: Any, ctx: ToolContext) -> str | None:
        """What protected path the call writes, in words, or None."""
        for path in tool.target_paths(params, ctx):
            what = protected_reason(path, self.reach.root_of(path))
            if what is not None:
                return what
        return tool.protected_target(params, ctx)

    async def _ask(
        self,
        tool: Tool,
        params: Any,
        ctx: ToolContext,
        reason: str,
        *,
        outside: bool,
        sticky: bool = True,
        remember: str = "",
        folder: Path | None = None,
    ) -> str | None:
        """Ask the user; ``sticky=False`` (and any write outside the project) means "allow
        for this session" allows this call only, and with ``remember`` every later call that
        would be asked for the same ``remember`` (the same armed repository), with ``folder``
        every later read beneath it."""
        summary = tool.summary(params)
        try:
            detail = await tool.approval_detail(params, ctx)
        except (ToolError, OSError) as exc:
            # The call would fail anyway (no match for an edit, a missing file...): nothing to
            # approve, and the model gets the same error the tool would give.
            return str(exc)
        group = tool.approval_group() if sticky and not outside else None
        request = ApprovalRequest(
            call_id=ctx.call_id,
            tool=tool.name,
            summary=summary,
            detail=detail,
            reason=reason,
            outside_project=outside,
            group=group[1] if group else "",
            session_scope=(
                "tool"
                if sticky and not outside
                else "repository"
                if remember
                else "folder"
                if folder is not None
                else ""
            ),
            scope_path=str(folder) if folder is not None else "",
        )
        ctx.emit(request)
        group_name = request.group
        decision: ApprovalDecision | None = None
        try:
            decision = await _wait_for_decision(request, ctx)
        finally:  # the answer, or "cancelled" (the turn ended first), is kept with the call
            if decision is not ApprovalDecision.NO_ANSWER:
                answer = decision.value if decision is not None else CANCELLED
                ctx.approvals.append({"decision": answer, "summary": summary, "group": group_name})
        allowing = (ApprovalDecision.ALLOW_ONCE, ApprovalDecision.ALLOW_SESSION)
        if request.updated_input is not None and decision in (
            *allowing,
            ApprovalDecision.ALLOW_GROUP,
        ):
            # Allowed with another input: that input alone, checked whole, this call only.
            return await self._rewritten(tool, params, ctx, request.updated_input, outside)
        match decision:
            case ApprovalDecision.ALLOW_ONCE:
                ctx.outside_allowed = outside
                return None
            case ApprovalDecision.ALLOW_SESSION:
                if sticky and not outside:  # never for writes outside or to the settings
                    self._session_allowed.add(tool.name)
                elif remember:
                    self._allowed_armed.add(remember)
                elif folder is not None:
                    self.reach.allow_reads(folder)
                ctx.outside_allowed = outside
                return None
            case ApprovalDecision.ALLOW_GROUP:
                if group is not None:
                    self._session_groups.add(group[0])
                return None
            case ApprovalDecision.DENY:
                return (
                    f"The user declined {summary}; it was not run. Do not retry it unchanged: "
                    f"ask the user how to proceed if it is needed."
                )
            case ApprovalDecision.NO_ANSWER:
                return (
                    f"Denied: {summary} needed the user's approval and nobody answered in "
                    f"time, so it was not run. Do not retry it; tell the user what you wanted "
                    f"to do and that the approval request went unanswered."
                )
            case _:
                return f"Cancelled while waiting for the user's approval; {summary} was not run."

    async def _rewritten(
        self, tool: Tool, params: Any, ctx: ToolContext, updated: dict[str, Any], outside: bool
    ) -> str | None:
        """The call allowed with ``updated`` as its input: None (``ctx.approved_params`` set
        when it differs) when it fits the tool and needs no approval beyond the one given;
        else the refusal, recorded as a denial."""
        summary = tool.summary(params)
        try:
            rewritten = tool.parse(updated)
        except ToolArgumentError as exc:
            why = f"the input it was allowed with does not fit {tool.name} ({exc})"
            self.denials.append(Denial(tool.name, ctx.call_id, params, summary, why))
            return f"Denied: {summary}: {why}, so it was not run. Tell the user."
        if rewritten == params:
            ctx.outside_allowed = outside
            return None
        shown = tool.summary(rewritten)
        try:
            refusal = await self._authorize(tool, rewritten, ctx, approved=True)
        except _NeedsItsOwnApproval as exc:
            why = f"the input it was allowed with needs an approval of its own: {exc.reason}"
            refusal = (
                f"Denied: {shown}: it was allowed with a changed input, and that input needs "
                f"an approval of its own ({exc.reason}), so it was not run. Do not retry it; "
                "tell the user.",
                why,
            )
        if refusal is not None:
            message, why = refusal
            self.denials.append(Denial(tool.name, ctx.call_id, rewritten, shown, why))
            return message
        ctx.approved_params = rewritten
        return None

    async def _rewrite_refused(
        self, tool: Tool, params: Any, ctx: ToolContext, reason: str, **_how: Any
    ) -> str | None:
        """In place of asking about a rewritten input: the one answer given covered the call
        it was asked about, not this one."""
        raise _NeedsItsOwnApproval(reason)


class _NeedsItsOwnApproval(AgentshError):
    """A rewritten input would have to be asked about (see :meth:`Approver._rewritten`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Ask(Protocol):
    """:meth:`Approver._ask`, or :meth:`Approver._rewrite_refused` in its place."""

    async def __call__(
        self,
        tool: Tool,
        params: Any,
        ctx: ToolContext,
        reason: str,
        *,
        outside: bool,
        sticky: bool = True,
        remember: str = "",
        folder: Path | None = None,
    ) -> str | None: ...


def _asked(message: str | None) -> tuple[str, str] | None:
    """The user's answer to :meth:`Approver._ask` (never a headless denial: nobody asked)."""
    return None if message is None else (message, "")


#: what a call's result records for a prompt the turn's end withdrew (nobody answered it)
CANCELLED = "cancelled"


async def _wait_for_decision(request: ApprovalRequest, ctx: ToolContext) -> ApprovalDecision | None:
    """The user's answer, or None when the turn was cancelled (or the prompt withdrawn)."""
    future = request.decision
    cancelled = asyncio.ensure_future(ctx.cancelled.wait())
    try:
        waiters: set[asyncio.Future[Any]] = {future, cancelled}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        future.cancel()  # the front end sees the prompt is void and closes it
        raise
    finally:
        cancelled.cancel()
    if not future.done():
        future.cancel()
        return None
    if future.cancelled() or future.exception() is not None:
        return None
    try:
        return ApprovalDecision(future.result())
    except ValueError:
        return None
