"""Checks of a parsed command line that argparse cannot make: options that exclude each
other, and options given where nothing reads them. An option quietly dropped (``agentsh
--add-dir X acp``, ``--no-session -c``) runs something else than the user asked for."""

from __future__ import annotations

import argparse

from agentsh.errors import EXIT_USAGE, CliError

#: the top-level options each subcommand reads (its handler key's first word); -m and
#: --api-base pass everywhere, as a shell alias (``alias agentsh='agentsh -m ...'``) puts them
#: before every command
TAKEN_BEFORE = {
    "acp": {"approve", "trust_project"},
    "mcp": {"trust_project"},
}
_PASS_EVERYWHERE = {"model", "api_base", "help", "version", "command"}


def check_options_before(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse top-level options given before a command (``args.command``) that it does not
    read."""
    command = str(args.command)
    own = _dests(_subparsers(parser)[command])  # the command's own options and arguments
    taken = _PASS_EVERYWHERE | TAKEN_BEFORE.get(command, set()) | own
    ignored = [
        max(action.option_strings, key=len)
        for action in parser._actions
        if action.option_strings
        and action.dest not in taken
        and getattr(args, action.dest, action.default) not in (None, False, action.default)
    ]
    if ignored:
        raise CliError(
            f"{', '.join(ignored)}: not taken by `agentsh {command}` (options before a "
            "command are for the shell and -p); leave them out",
            EXIT_USAGE,
        )


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _dests(parser: argparse.ArgumentParser) -> set[str]:
    """Every destination ``parser`` and its subcommands write."""
    found = {action.dest for action in parser._actions}
    for sub in _subparsers(parser).values():
        found |= _dests(sub)
    return found


def check_session_options(args: argparse.Namespace) -> None:
    """At most one way to choose the session: honouring one and quietly dropping another
    (``--no-session -c`` starting afresh) would lose the conversation the user asked for."""
    given = [
        name
        for name, on in (
            ("--no-session", args.no_session),
            ("--session", args.session is not None),
            ("-c/--continue", args.continue_session),
            ("-r/--resume", args.resume is not None),
        )
        if on
    ]
    if len(given) > 1:
        raise CliError(f"{given[0]} and {given[1]} cannot be used together; pick one", EXIT_USAGE)
    resuming = [g for g in given if g != "--no-session"]
    if getattr(args, "fork_session", False) and not resuming:
        raise CliError("--fork-session needs a session to copy: -c, -r ID or --session", EXIT_USAGE)
    if getattr(args, "session_id", None) and resuming and not args.fork_session:
        raise CliError(
            f"--session-id names a new session; with {resuming[0]} add --fork-session", EXIT_USAGE
        )
