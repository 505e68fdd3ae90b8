"""The ``updatedPermissions`` a Claude Agent SDK host sends with an ``allow`` answer
(``PermissionResultAllow(updated_permissions=[...])``, a host's "always allow"): Claude Code's
``PermissionUpdate`` list, applied to this run.

- ``addRules`` / ``replaceRules`` / ``removeRules`` with ``behavior`` ``allow`` or ``deny``:
  rules in ``--allowedTools`` syntax (``toolName`` and, when given, ``(ruleContent)``; an MCP
  tool's full name as ``can_use_tool`` gave it becomes the rule for that tool of its server as
  configured), kept beside the command line's. ``replaceRules`` replaces and ``removeRules``
  removes the rules added this way; the command line's stay (the program that gave them can
  restart the run).
  ``ask`` rules are not supported (agentsh has none) and are named as not applied.
- ``setMode``: the permission mode, as ``set_permission_mode`` sets it (``bypassPermissions``
  refused when ``--settings`` disabled it).
- ``addDirectories`` / ``removeDirectories``: folders written like the project, as
  ``--add-dir`` gives them, each checked as another program's folder is
  (:mod:`agentsh.tools.granted_folders`: not the root, the home folder or a hidden folder of
  it such as ``~/.ssh``); a relative path is taken from the working folder.

Every update holds for this run only, whatever its ``destination``: one other than
``session`` (``localSettings``, ``projectSettings``, ``userSettings``) is applied for the run and
a warning says it was not saved. agentsh writes no settings file on the word of the program
driving it: a project's settings are what the user trusted with the folder. The approver's
own guards stand above every rule and mode, as they do for the command line's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.termsafe import one_line
from agentsh.tools.approval import PERMISSION_MODES
from agentsh.tools.granted_folders import checked_folder
from agentsh.tools.rules import RuleError, ToolRule, ToolRules, parse_rule

if TYPE_CHECKING:
    from agentsh.frontend import HeadlessAPI

#: where Claude Code would keep an update; agentsh keeps each for the run only
DESTINATIONS = ("session", "localSettings", "projectSettings", "userSettings")
_RULE_UPDATES = ("addRules", "replaceRules", "removeRules")
_KINDS = (*_RULE_UPDATES, "setMode", "addDirectories", "removeDirectories")
_SHOWN = 120


class PermissionUpdates:
    """Applies a host's permission updates to ``agent`` for the rest of the run."""

    def __init__(
        self,
        agent: HeadlessAPI,
        cwd: Path,
        project: Path,
        *,
        bypass_allowed: bool = True,
    ) -> None:
        self.agent = agent
        self.cwd = cwd  # a relative folder is taken from here
        self.project = project.resolve()  # a folder inside it adds nothing
        self.bypass_allowed = bypass_allowed  # False: --settings disabled bypassPermissions
        self._base = agent.tool_rules  # the command line's, never changed here
        self._rules: dict[str, list[ToolRule]] = {"allow": [], "deny": []}
        self._base_dirs = agent.folders[0]  # --add-dir's

    def apply(self, updates: object) -> list[str]:
        """Apply each update that can be; one line for each that was not, or only in part."""
        if not isinstance(updates, list):
            return ["updatedPermissions is not a list; nothing applied"]
        problems: list[str] = []
        for update in updates:
            if not isinstance(update, Mapping):
                problems.append("an updatedPermissions entry is not an object; not applied")
                continue
            kind = str(update.get("type", ""))
            label = kind if kind in _KINDS else _shown(kind)
            destination = update.get("destination") or "session"
            if destination not in DESTINATIONS:
                problems.append(f"{label}: unknown destination {_shown(destination)}")
                continue
            found = self._apply(kind, update)
            applied = found is None or found[1]
            if found is not None:
                problems.append(f"{label}: {found[0]}")
            if applied and destination != "session":
                problems.append(
                    f"{kind}: applied for this run only, not saved to {destination} (agentsh "
                    "writes no settings file for the program driving it)"
                )
        return problems

    def _apply(self, kind: str, update: Mapping[str, object]) -> tuple[str, bool] | None:
        """None when applied whole; else what went wrong and whether anything was applied."""
        if kind in _RULE_UPDATES:
            return self._rule_update(kind, update)
        if kind == "setMode":
            return self._set_mode(update.get("mode"))
        if kind in ("addDirectories", "removeDirectories"):
            folders = update.get("directories")
            if not isinstance(folders, list):
                return "directories must be a list of paths; not applied", False
            return self._folders(folders, add=kind == "addDirectories")
        return "agentsh does not know this update; not applied", False

    def _rule_update(self, kind: str, update: Mapping[str, object]) -> tuple[str, bool] | None:
        behavior = update.get("behavior")
        if behavior not in self._rules:
            why = "ask rules are not supported" if behavior == "ask" else "no behavior"
            return f"{why} (allow or deny); not applied", False
        rules: list[ToolRule] = []
        problems: list[str] = []
        given = update.get("rules")
        for item in given if isinstance(given, list) else []:
            try:
                rules.append(parse_rule(self._as_configured(_rule_text(item))))
            except (RuleError, TypeError) as exc:
                problems.append(str(exc) if isinstance(exc, RuleError) else str(exc.args[0]))
        if not isinstance(given, list):
            problems.append("rules must be a list")
        kept = self._rules[str(behavior)]
        if kind == "addRules":
            kept += [r for r in rules if r.text not in {k.text for k in kept}]
        elif kind == "replaceRules":
            if problems:  # a replacement half read would drop rules the host meant to keep
                return "; ".join(problems) + "; not applied", False
            kept[:] = rules
        else:
            texts = {r.text for r in rules}
            base = self._base.allow if behavior == "allow" else self._base.deny
            fixed = sorted(texts & {r.text for r in base})
            kept[:] = [r for r in kept if r.text not in texts]
            if fixed:
                problems.append(f"{', '.join(fixed)} came from the command line and stays")
        self.agent.set_tool_rules(
            ToolRules(
                (*self._base.allow, *self._rules["allow"]), (*self._base.deny, *self._rules["deny"])
            )
        )
        return ("; ".join(problems), bool(rules)) if problems else None

    def _as_configured(self, text: str) -> str:
        """An MCP tool's name as the model calls it (what ``can_use_tool`` asked about, so
        what a host's "always allow" sends back) as the rule that names its server as
        configured: MCP rules match that (:mod:`agentsh.tools.rules`), and the full name is
        one tool's only."""
        identity = self.agent.mcp_identity(text) if text.startswith("mcp__") else None
        return text if identity is None else f"mcp__{identity[0]}__{identity[1]}"

    def _set_mode(self, mode: object) -> tuple[str, bool] | None:
        if not isinstance(mode, str) or mode not in PERMISSION_MODES:
            return f"agentsh has no permission mode {_shown(mode)}; not applied", False
        if mode == "bypassPermissions" and not self.bypass_allowed:
            return (
                "--settings disables bypassPermissions (permissions.disableBypassPermissionsMode)"
                "; not applied"
            ), False
        self.agent.set_approval_mode(PERMISSION_MODES[mode], plan=mode == "plan")
        return None

    def _folders(self, given: list[object], *, add: bool) -> tuple[str, bool] | None:
        folders = list(self.agent.folders[0])
        problems: list[str] = []
        changed = False
        for item in given:
            problem, folder = checked_folder(item, base=self.cwd)
            if folder is None:
                problems.append(f"{problem}; not {'added' if add else 'removed'}")
            elif add and folder not in folders and not folder.is_relative_to(self.project):
                folders.append(folder)
                changed = True
            elif not add and folder in folders:
                if folder in self._base_dirs:
                    problems.append(f"{folder} came from --add-dir and stays")
                    continue
                folders.remove(folder)
                changed = True
        if changed:
            self.agent.set_folders(added=folders)
        return ("; ".join(problems), changed) if problems else None


def _rule_text(item: object) -> str:
    """A ``PermissionRuleValue`` as ``--allowedTools`` writes it: ``Bash(git status:*)``."""
    if not isinstance(item, Mapping) or not isinstance(item.get("toolName"), str):
        raise TypeError("a rule without a toolName")
    content = item.get("ruleContent")
    if content is not None and not isinstance(content, str):
        name = _shown(item["toolName"])
        raise TypeError(f"the rule for {name} has a ruleContent that is not text")
    name = str(item["toolName"])
    return f"{name}({content})" if content else name


def _shown(value: object) -> str:
    text = one_line(str(value))
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")
