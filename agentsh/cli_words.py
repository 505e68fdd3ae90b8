"""The words of an ``agentsh`` command line: options told apart from prompt words the way
argparse would read them (Claude Code's ``claude -p --flags "PROMPT"`` order), and what to say
about words that are neither (an unknown option by its name, a mistyped command).

Standard library only, like :mod:`agentsh.cli`, which keeps ``agentsh --help`` fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from agentsh.errors import EXIT_USAGE, CliError


def split_prompt_words(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[list[str], list[str]]:
    """``argv`` without the prompt words, and the words (Claude Code's ``claude -p --flags
    "PROMPT"`` form), found the way argparse would read the options.

    Argparse alone would take a positional prompt for a subcommand name and answer "invalid
    choice", and would read the value of an unknown option as a subcommand too; here an unknown
    option is named as what it is. Everything from the first subcommand name on is left to
    the subcommand's parser.
    """
    options = parser._option_string_actions
    commands = subcommand_names(parser)
    rest: list[str] = []
    words: list[str] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token == "--":
            words.extend(tokens[i:])
            break
        if token.startswith("-") and token != "-" and not _is_number(token):
            rest.append(token)
            if token.startswith("--"):
                name, eq, _ = token.partition("=")
                action = options.get(name)
                if action is None:
                    raise CliError(_unknown_option(name, options), EXIT_USAGE)
                if not eq:
                    i = _take_values(action, tokens, i, rest)
                continue
            for at in range(1, len(token)):  # a cluster of short flags: -cp, -m model
                action = options.get("-" + token[at])
                if action is None:
                    raise CliError(_unknown_option("-" + token[at], options), EXIT_USAGE)
                if action.nargs != 0:
                    if at == len(token) - 1:
                        i = _take_values(action, tokens, i, rest)
                    break
            continue
        if not words and token in commands:
            rest.extend(tokens[i - 1 :])
            break
        words.append(token)
    return rest, words


def _take_values(action: argparse.Action, tokens: list[str], i: int, rest: list[str]) -> int:
    """Move the values ``action`` consumes (as argparse counts them) into ``rest``."""

    def is_value(token: str) -> bool:
        return not token.startswith("-") or token == "-" or _is_number(token)

    nargs = action.nargs
    if nargs == 0:
        return i
    if nargs is None or isinstance(nargs, int):
        count = 1 if nargs is None else nargs
        rest.extend(tokens[i : i + count])
        return i + count
    if nargs == "?":
        if i < len(tokens) and is_value(tokens[i]):
            rest.append(tokens[i])
            return i + 1
        return i
    while i < len(tokens) and is_value(tokens[i]):  # "+" and "*"
        rest.append(tokens[i])
        i += 1
    return i


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def subcommand_names(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _unknown_option(name: str, options: dict[str, argparse.Action]) -> str:
    import difflib

    close = difflib.get_close_matches(name, [o for o in options if o.startswith("--")], n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown option {name}{hint}; `agentsh --help` lists the options"


def words_in_a_terminal(words: list[str], parser: argparse.ArgumentParser) -> str:
    """A prompt without -p in a terminal: most likely a mistyped command, else a prompt
    meant for -p (the interactive shell does not take a first message yet)."""
    import difflib

    if len(words) == 1:
        close = difflib.get_close_matches(words[0], sorted(subcommand_names(parser)), n=1)
        if close:
            return f"unknown command {words[0]!r} (did you mean {close[0]}?)"
    return (
        f"unexpected argument {words[0]!r}; to run a prompt headless use "
        f'agentsh -p "{" ".join(words)}"'
    )
