"""Claude Code's flags that shape what a run may do: ``--dangerously-skip-permissions``,
``--add-dir``, ``--mcp-config`` / ``--strict-mcp-config``, ``--settings``, ``--tools`` and
``--fallback-model`` (README: "Headless use").

Everything here is chosen by the user on the command line, so it is trusted as the user's own
configuration is: an added folder may be written like the project, an ``--mcp-config`` server
starts like one in the user's ``mcp.json``, a ``--settings`` file's rules are the user's rules.
The approval layer's own guards stay (:mod:`agentsh.tools.approval`): writes to ``.git/`` and
``.agentsh/config.toml``, to a hard-linked file, or (followed through links) outside the project
and the added folders are never let through without the user.

:func:`add_arguments` registers the flags (standard library only: ``agentsh --help`` stays
fast); :func:`resolve` reads them once, folds what the TUI and ``-p`` already understand into
the namespace (``--settings``' model, mode and rules; ``--dangerously-skip-permissions`` as
``--permission-mode bypassPermissions``) and returns the rest as :class:`RunExtras`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from agentsh.errors import EXIT_USAGE, CliError

if TYPE_CHECKING:  # json, pathlib and dataclasses load when a flag is used, not for --help
    from pathlib import Path

    from agentsh.mcp.servers_config import ServerSpec

#: ``--max-turns`` when not given: model calls in one -p turn
DEFAULT_MAX_TURNS = 50
#: what a ``--settings`` value may hold before it is refused (a settings file is small)
MAX_SETTINGS_BYTES = 1024 * 1024
#: the ``permissions`` keys agentsh understands; everything else is named as ignored
_PERMISSION_KEYS = ("allow", "deny", "defaultMode", "additionalDirectories")
_MODES = ("default", "acceptEdits", "bypassPermissions", "plan", "dontAsk")

BYPASS_WARNING = (
    "{what}: edits and commands run without asking, but for "
    "--disallowedTools rules (refused) and writes to .git/, .agentsh/config.toml, hard-linked "
    "files or outside the project and its --add-dir folders (asked; refused with -p)"
)


class RunExtras(NamedTuple):
    """What :func:`resolve` found that the front ends hand to ``build_agent`` as it is."""

    added_dirs: tuple[Path, ...] = ()  # --add-dir and permissions.additionalDirectories
    mcp_servers: tuple[ServerSpec, ...] = ()  # --mcp-config
    strict_mcp: bool = False  # --strict-mcp-config: no other MCP servers
    fallback_model: str | None = None  # --fallback-model (-p only)
    warnings: tuple[str, ...] = ()  # one line each, for the user, as the run starts
    settings_env: tuple[tuple[str, str], ...] = ()  # --settings' env, for os.environ

    def appended(self, text: str) -> str:
        """``--append-system-prompt``'s ``text``, then what the model is told about the added
        folders."""
        if not self.added_dirs:
            return text
        listed = "\n".join(f"- {d}" for d in self.added_dirs)
        note = (
            "# Additional folders\n\nBesides the project, the user gave these folders "
            f"(--add-dir); files in them may be read and changed like the project's:\n{listed}"
        )
        return f"{text.strip()}\n\n{note}" if text.strip() else note


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags, on the top-level parser (the TUI and ``-p`` both read them)."""
    parser.add_argument(
        "--dangerously-skip-permissions",
        dest="skip_permissions",
        action="store_true",
        help="run every edit and command without asking (= --permission-mode "
        "bypassPermissions); .git/, agentsh's settings and writes outside the project and "
        "--add-dir folders still are not",
    )
    parser.add_argument(
        "--add-dir",
        dest="add_dirs",
        action="extend",
        nargs="+",
        metavar="DIR",
        help="more folders the tools may write, like the project (links out of them are not "
        "followed)",
    )
    parser.add_argument(
        "--mcp-config",
        dest="mcp_configs",
        action="extend",
        nargs="+",
        metavar="FILE|JSON",
        help='MCP servers from JSON files or strings ({"mcpServers": {...}}), trusted like '
        "the user's mcp.json",
    )
    parser.add_argument(
        "--strict-mcp-config",
        action="store_true",
        help="use only the --mcp-config servers, none from mcp.json, .mcp.json or config.toml",
    )
    parser.add_argument(
        "--settings",
        dest="settings_json",
        action="append",
        metavar="FILE|JSON",
        help="Claude Code settings (a file or a JSON string): permissions allow/deny/"
        "defaultMode/additionalDirectories, model and env are used; the rest is named as "
        "ignored",
    )
    parser.add_argument(
        "--tools",
        nargs="+",
        metavar="TOOL",
        help='only these built-in tools ("Bash,Edit,Read" or agentsh names; "" none, '
        '"default" all); MCP tools are not affected',
    )
    parser.add_argument(
        "--fallback-model",
        metavar="MODEL",
        help="-p: when the model stays overloaded or unavailable after its retries, go on "
        "with this one",
    )
    parser.add_argument(
        "--system-prompt-file",
        metavar="FILE",
        help="--system-prompt with the text of FILE",
    )
    # What the Claude Agent SDK may pass that agentsh has no use for: taken, and named in one
    # warning line (a whole run refused over a tuning knob helps nobody).
    for flag, what in _IGNORED_FLAGS.items():
        kind: dict[str, Any] = {"action": "store_true"} if not what else {"metavar": what}
        parser.add_argument(flag, dest=_dest(flag), help=argparse.SUPPRESS, **kind)
    for flag in _REFUSED_FLAGS:
        parser.add_argument(flag, dest=_dest(flag), metavar="X", help=argparse.SUPPRESS)


#: Claude Code flags agentsh takes and ignores (with a warning): flag -> metavar ("" = switch)
_IGNORED_FLAGS = {
    "--setting-sources": "SOURCES",  # agentsh reads its own config.toml and a trusted project's
    "--effort": "LEVEL",
    "--max-thinking-tokens": "N",
    "--thinking": "MODE",
    "--thinking-display": "MODE",
    "--betas": "BETAS",
    "--task-budget": "N",
    "--include-hook-events": "",  # agentsh has no hooks: there are none to include
}
#: Claude Code flags whose result agentsh cannot give: flag -> why
_REFUSED_FLAGS = {
    "--json-schema": "structured output (--json-schema) is not supported by agentsh",
    "--plugin-dir": "Claude Code plugins (--plugin-dir) are not supported by agentsh",
    "--session-mirror": "--session-mirror is not supported by agentsh",
    # The SDK's resume at a message (and the guard that goes with it): the uuids of agentsh's
    # message lines are not entries of its log, and resuming the whole session instead
    # would keep what the host asked to drop.
    "--resume-session-at": "resuming at a message (--resume-session-at) is not supported by "
    "agentsh; branch from a message in the TUI's tree (/tree) instead",
    "--resume-drops-turn": "--resume-drops-turn is not supported by agentsh",
}


def _dest(flag: str) -> str:
    return "cc_" + flag.removeprefix("--").replace("-", "_")


def resolve(args: argparse.Namespace, cwd: Path, *, headless: bool) -> RunExtras:
    """Read the flags; the namespace is updated with what the front ends already take
    (model, permission mode, tool rules). Raises :class:`CliError` (exit 2) for a value that
    cannot be used: a folder that is not one, a file that cannot be read, JSON that is not
    an object of the documented shape."""
    warnings: list[str] = []
    added: list[Path] = []
    env: dict[str, str] = {}
    for flag, why in _REFUSED_FLAGS.items():
        if getattr(args, _dest(flag), None) is not None:
            raise CliError(why, EXIT_USAGE)
    ignored = [f for f in _IGNORED_FLAGS if getattr(args, _dest(f), None) not in (None, False)]
    if ignored:
        warnings.append(f"{', '.join(ignored)}: not used by agentsh (ignored)")
    _read_system_prompt_file(args, cwd)
    for value in getattr(args, "settings_json", None) or ():
        doc = _json_object("--settings", value)
        ignored = _apply_settings(args, doc, cwd, added, env)
        if ignored:
            warnings.append(f"--settings: agentsh ignores {', '.join(ignored)}")
    if getattr(args, "skip_permissions", False):
        if getattr(args, "approve", None):
            raise CliError(
                "--dangerously-skip-permissions and --approve cannot be used together",
                EXIT_USAGE,
            )
        mode = getattr(args, "permission_mode", None)
        if mode not in (None, "bypassPermissions") and not getattr(args, "_mode_from", ""):
            raise CliError(
                f"--dangerously-skip-permissions and --permission-mode {mode} cannot be used "
                "together",
                EXIT_USAGE,
            )
        args.permission_mode = "bypassPermissions"
        warnings.insert(0, BYPASS_WARNING.format(what="--dangerously-skip-permissions"))
    elif getattr(args, "_mode_from", "") and args.permission_mode == "bypassPermissions":
        # as loud as the flag: a settings file can switch every prompt off too
        what = "--settings' permissions.defaultMode bypassPermissions"
        warnings.insert(0, BYPASS_WARNING.format(what=what))
    bypass = getattr(args, "permission_mode", None) == "bypassPermissions"
    if getattr(args, "_bypass_disabled", False) and bypass:
        raise CliError(
            "--settings disables bypassPermissions (permissions.disableBypassPermissionsMode)",
            EXIT_USAGE,
        )
    tools = getattr(args, "tools", None)
    if tools is not None:  # the others are taken away as a bare deny rule takes a tool away
        left_out = _tools_left_out(tools)
        args.disallowed_tools = [*(getattr(args, "disallowed_tools", None) or ()), *left_out]
    added += [_folder(text, cwd) for text in getattr(args, "add_dirs", None) or ()]
    servers = tuple(
        spec
        for value in getattr(args, "mcp_configs", None) or ()
        for spec in _mcp_servers(value, warnings)
    )
    strict = bool(getattr(args, "strict_mcp_config", False))
    if not headless and (print_only := _print_only(args)):
        warnings.append(f"{', '.join(print_only)}: for -p only; the shell ignores them")
    fallback = getattr(args, "fallback_model", None) or None
    if fallback is not None and not headless:
        raise CliError("--fallback-model works with -p only, as in Claude Code", EXIT_USAGE)
    if fallback is not None and fallback == getattr(args, "model", None):
        raise CliError("--fallback-model must name another model than -m", EXIT_USAGE)
    return RunExtras(
        added_dirs=tuple(dict.fromkeys(added)),
        mcp_servers=servers,
        strict_mcp=strict,
        fallback_model=fallback,
        warnings=tuple(warnings),
        settings_env=tuple(env.items()),
    )


#: -p's own flags (namespace attribute, flag, the value that means "not given")
_PRINT_ONLY: tuple[tuple[str, str, object], ...] = (
    ("output_format", "--output-format", "text"),
    ("input_format", "--input-format", "text"),
    ("partial", "--include-partial-messages", False),
    ("permission_prompt_tool", "--permission-prompt-tool", None),
    ("max_turns", "--max-turns", DEFAULT_MAX_TURNS),
    ("max_budget_usd", "--max-budget-usd", None),
)


def _print_only(args: argparse.Namespace) -> list[str]:
    """The -p flags given to the TUI (said once at start, rather than dropped in silence)."""
    return [flag for attr, flag, unset in _PRINT_ONLY if getattr(args, attr, unset) != unset]


def _read_system_prompt_file(args: argparse.Namespace, cwd: Path) -> None:
    """``--system-prompt-file FILE`` becomes ``--system-prompt`` with the file's text."""
    name = getattr(args, "system_prompt_file", None)
    if name is None:
        return
    if getattr(args, "system_prompt", None):
        raise CliError("--system-prompt and --system-prompt-file: give one", EXIT_USAGE)
    from pathlib import Path

    path = cwd / Path(name).expanduser()
    try:
        data = path.read_bytes()[: MAX_SETTINGS_BYTES + 1]
    except OSError as exc:
        raise CliError(f"--system-prompt-file: cannot read {name}: {exc.strerror}") from exc
    if len(data) > MAX_SETTINGS_BYTES:
        raise CliError(f"--system-prompt-file: {name} is over 1 MB", EXIT_USAGE)
    args.system_prompt = data.decode("utf-8", "replace")


def apply_environment(extras: RunExtras) -> None:
    """``--settings``' ``env``, as Claude Code applies it: set for this run (the model calls,
    the commands the agent runs, MCP servers), before anything reads the environment."""
    os.environ.update(dict(extras.settings_env))


# -- --settings -------------------------------------------------------------------------------


def _apply_settings(
    args: argparse.Namespace,
    doc: Mapping[str, Any],
    cwd: Path,
    added: list[Path],
    env: dict[str, str],
) -> list[str]:
    """Fold one settings object into ``args``/``added``/``env``; the keys left unused."""
    ignored = [key for key in doc if key not in ("permissions", "model", "env")]
    model = doc.get("model")
    if model is not None:
        if not isinstance(model, str) or not model.strip():
            raise _bad("--settings", "model must be a model string")
        if not getattr(args, "model", None):  # -m wins, as a flag wins over settings
            args.model = model.strip()
    raw_env = doc.get("env", {})
    if not isinstance(raw_env, Mapping):
        raise _bad("--settings", "env must be an object of names and strings")
    for name, value in raw_env.items():
        if not isinstance(value, str | int | float | bool) or not name or "=" in name:
            raise _bad("--settings", f"env {name!r} must be a string")
        env[name] = str(value).lower() if isinstance(value, bool) else str(value)
    permissions = doc.get("permissions", {})
    if not isinstance(permissions, Mapping):
        raise _bad("--settings", "permissions must be an object")
    for key in permissions:
        if key not in (*_PERMISSION_KEYS, "disableBypassPermissionsMode"):
            ignored.append(f"permissions.{key}")
    allow = _strings(permissions, "allow")
    deny = _strings(permissions, "deny")
    if allow:
        args.allowed_tools = [*(getattr(args, "allowed_tools", None) or ()), *allow]
    if deny:
        args.disallowed_tools = [*(getattr(args, "disallowed_tools", None) or ()), *deny]
    added += [_folder(text, cwd) for text in _strings(permissions, "additionalDirectories")]
    mode = permissions.get("defaultMode")
    if mode is not None:
        if mode not in _MODES:
            raise _bad("--settings", f"permissions.defaultMode must be one of {', '.join(_MODES)}")
        # The flags win: --permission-mode, --approve and --dangerously-skip-permissions.
        if not (getattr(args, "permission_mode", None) or getattr(args, "approve", None)):
            args.permission_mode = mode
            args._mode_from = "--settings"
    if permissions.get("disableBypassPermissionsMode") == "disable":
        args._bypass_disabled = True
    return ignored


def _strings(permissions: Mapping[str, Any], key: str) -> list[str]:
    value = permissions.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _bad("--settings", f"permissions.{key} must be a list of strings")
    return list(value)


# -- --tools ------------------------------------------------------------------------------------


def _tools_left_out(values: list[str]) -> list[str]:
    """The built-in tools ``--tools`` does not name (Claude Code's names cover agentsh's as the
    rules do: ``Read`` is read, grep, find and ls). agentsh's memory tools go unless named."""
    from agentsh.tools.builtin import builtin_tools
    from agentsh.tools.memory import MemoryTool
    from agentsh.tools.memory_search import MemoryGetTool, MemorySearchTool
    from agentsh.tools.rules import CLAUDE_CODE_NAMES, split_rules

    names = [tool.name for tool in builtin_tools()]
    names += [MemoryTool.name, MemorySearchTool.name, MemoryGetTool.name]
    wanted = split_rules(values)
    if wanted == ["default"]:
        return []
    keep: set[str] = set()
    for name in wanted:
        if name not in CLAUDE_CODE_NAMES and name not in names:
            known = ", ".join([*CLAUDE_CODE_NAMES, *names])
            raise _bad("--tools", f"no built-in tool {name!r} (known: {known})")
        keep.update(CLAUDE_CODE_NAMES.get(name, (name,)))
    return [name for name in names if name not in keep]


# -- --mcp-config -----------------------------------------------------------------------------


def _mcp_servers(value: str, warnings: list[str]) -> list[ServerSpec]:
    """The servers of one ``--mcp-config`` value, in the user's scope (the user chose them);
    a bad entry is a warning (as in the user's mcp.json), a bad file an error."""
    from pathlib import Path

    from agentsh.mcp.servers_config import Scope, parse_servers

    doc = _json_object("--mcp-config", value)
    servers = doc.get("mcpServers")
    if not isinstance(servers, Mapping):
        raise _bad("--mcp-config", f"{_shown(value)} has no mcpServers object")
    source = Path(value) if not value.lstrip().startswith("{") else Path("--mcp-config")
    problems: list[str] = []
    specs = parse_servers(servers, scope=Scope.USER, source=source, problems=problems)
    warnings += [f"--mcp-config: {problem}" for problem in problems]
    return specs


# -- shared -----------------------------------------------------------------------------------


def _json_object(flag: str, value: str) -> Mapping[str, Any]:
    """A JSON object given inline (it starts with ``{``) or as a file's path."""
    import json

    text = value
    if not value.lstrip().startswith("{"):
        try:
            with open(value, "rb") as handle:
                data = handle.read(MAX_SETTINGS_BYTES + 1)
        except OSError as exc:
            raise _bad(flag, f"cannot read {_shown(value)}: {exc.strerror or exc}") from None
        if len(data) > MAX_SETTINGS_BYTES:
            raise _bad(flag, f"{_shown(value)} is larger than {MAX_SETTINGS_BYTES // 1024} KiB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _bad(flag, f"{_shown(value)} is not UTF-8 text") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"{_shown(value)} is not valid JSON ({exc.msg}, line {exc.lineno})"
        raise _bad(flag, problem) from None
    if not isinstance(doc, dict):
        raise _bad(flag, f"{_shown(value)} must be a JSON object")
    return doc


def _folder(text: str, cwd: Path) -> Path:
    """An added folder, resolved (links followed once, here: what the user named)."""
    from pathlib import Path

    path = (cwd / Path(text).expanduser()).resolve()
    if not path.is_dir():
        raise _bad("--add-dir", f"{_shown(text)} is not a folder")
    return path


def _shown(value: str) -> str:
    if value.lstrip().startswith("{"):
        return "the JSON given"
    return repr(value) if len(value) < 200 else repr(value[:200] + "...")


def _bad(flag: str, what: str) -> CliError:
    return CliError(f"{flag}: {what}", EXIT_USAGE)
