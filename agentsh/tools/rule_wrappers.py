"""What a command runs through wrappers, shells and ``eval``: what a deny rule looks through.

``--disallowedTools "Bash(rm:*)"`` must refuse ``rm`` however the line reaches it: by its path
(``/bin/rm``), behind a wrapper and the wrapper's options with their values (``sudo -u root
rm``, ``timeout -s KILL 5 rm``, ``nice -n 5 rm``, ``env -u HOME rm``, ``exec -a x rm``), in a
string a shell, ``env -S`` or ``eval`` runs (``bash -c "rm -rf x"``), or as what ``find -exec``
and ``xargs`` run. :func:`inner_commands` lists each of those commands; None when one of them
cannot be read (a shell script with ``$(...)``): the caller refuses then, the safe side.
"""

from __future__ import annotations

from collections.abc import Callable

Parse = Callable[[str], "list[list[str]] | None"]

# Wrappers that run the rest of the line, with their options that take a value (short letters
# as one string; long options, given without "=", take the next word too) and how many
# words (a duration, a priority, a file) stand between the options and the command.
_WRAPPERS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "sudo": ("ugCDhprtUT", ("--user", "--group", "--close-from", "--chdir", "--host", "--prompt",
                            "--role", "--type", "--other-user", "--command-timeout"), 0),
    "doas": ("uC", (), 0),
    "env": ("uCP", ("--unset", "--chdir"), 0),
    "nice": ("n", ("--adjustment",), 0),
    "ionice": ("cnp", ("--class", "--classdata", "--pid"), 0),
    "stdbuf": ("ioe", ("--input", "--output", "--error"), 0),
    "timeout": ("sk", ("--signal", "--kill-after"), 1),
    "nohup": ("", (), 0),
    "setsid": ("", (), 0),
    "time": ("fo", ("--format", "--output"), 0),
    "command": ("", (), 0),
    "exec": ("a", (), 0),
    "builtin": ("", (), 0),
    "busybox": ("", (), 0),
    "xargs": ("aEeIiLlnPsd", ("--arg-file", "--eof", "--replace", "--max-lines",
                             "--max-args", "--max-procs", "--max-chars", "--delimiter"), 0),
    "chrt": ("", (), 1),
    "taskset": ("", (), 1),
    "flock": ("wEnc", ("--timeout", "--conflict-exit-code"), 1),
    "watch": ("nd", ("--interval",), 0),
    "unbuffer": ("", (), 0),
}  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_MAX_DEPTH = 8


def inner_commands(words: list[str], parse: Parse, depth: int = 0) -> list[list[str]] | None:
    """``words`` (the program named by its file name) and every command it runs through the
    wrappers above, a shell's ``-c``, ``eval``, ``env -S``, ``find -exec`` or ``xargs``; None
    when one of those cannot be read."""
    if depth > _MAX_DEPTH:
        return None
    found: list[list[str]] = []
    while words:
        while words and "=" in words[0] and not words[0].startswith(("=", "-")):
            words = words[1:]  # NAME=value before the command
        if not words:
            break
        program = words[0].rsplit("/", 1)[-1]
        words = [program, *words[1:]]
        found.append(words)
        inner: list[list[str]] | None = []
        if program in _SHELLS:
            inner = _shell_script(words[1:], parse, depth)
            words = []
        elif program == "eval":
            inner = _parsed(" ".join(words[1:]), parse, depth)
            words = []
        elif program == "find":
            inner = _find_commands(words[1:], parse, depth)
            words = []
        elif program in _WRAPPERS:
            words, inner = _after_wrapper(program, words[1:], parse, depth)
        else:
            words = []
        if inner is None:
            return None
        found += inner
    return found


def _parsed(text: str, parse: Parse, depth: int) -> list[list[str]] | None:
    parts = parse(text)
    if parts is None:
        return None
    found: list[list[str]] = []
    for part in parts:
        inner = inner_commands(part, parse, depth + 1)
        if inner is None:
            return None
        found += inner
    return found


def _shell_script(arguments: list[str], parse: Parse, depth: int) -> list[list[str]] | None:
    """The commands of ``sh -c SCRIPT`` (also ``-ec``, ``-lc``); nothing for a shell given a
    script file (``bash x.sh``), which no rule sees into, as for ``./x.sh`` or ``make``."""
    for index, word in enumerate(arguments):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return _parsed(arguments[index + 1] if index + 1 < len(arguments) else "", parse, depth)
        if not word.startswith(("-", "+")):
            break  # the script file
    return []


def _find_commands(arguments: list[str], parse: Parse, depth: int) -> list[list[str]] | None:
    found: list[list[str]] = []
    index = 0
    while index < len(arguments):
        if arguments[index] in _FIND_RUNS:
            end = index + 1
            while end < len(arguments) and arguments[end] not in (";", "+", "\\;"):
                end += 1
            inner = inner_commands(arguments[index + 1 : end], parse, depth + 1)
            if inner is None:
                return None
            found += inner
            index = end
        index += 1
    return found


def _after_wrapper(
    program: str, arguments: list[str], parse: Parse, depth: int
) -> tuple[list[str], list[list[str]] | None]:
    """The command a wrapper runs (its options and their values skipped), and what an
    ``env -S STRING`` runs."""
    short, long, positional = _WRAPPERS[program]
    index = 0
    while index < len(arguments) and arguments[index].startswith("-") and arguments[index] != "-":
        option = arguments[index]
        index += 1
        if option == "--":
            break
        if program == "env" and (option.startswith("-S") or option.startswith("--split-string")):
            text = option.partition("=")[2] if option.startswith("--") else option[2:]
            if not text and index < len(arguments):
                text, index = arguments[index], index + 1
            return [], _parsed(text, parse, depth)
        if option.startswith("--"):
            if "=" not in option and option in long:
                index += 1
            continue
        # -n5, -u root, -nu root: the last letter takes the next word when nothing follows it
        letters = option[1:]
        taking = next((i for i, letter in enumerate(letters) if letter in short), None)
        if taking is not None and taking == len(letters) - 1:
            index += 1
    if program == "env":
        while index < len(arguments) and "=" in arguments[index]:
            index += 1
    return arguments[index + positional :], []
