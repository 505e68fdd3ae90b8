"""What a command runs through wrappers, shells and ``eval``: what a deny rule looks through.

``--disallowedTools "Bash(rm:*)"`` must refuse ``rm`` however the line reaches it: by its path
(``/bin/rm``), behind a wrapper and the wrapper's options with their values (``sudo -u root
rm``, ``timeout -s KILL 5 rm``, ``nice -n 5 rm``, ``env -u HOME rm``, ``exec -a x rm``), in a
string a shell, ``env -S``, ``eval``, ``script -c`` or ``su -c`` runs (``bash -c "rm -rf x"``,
``bash -o errexit -c ...``, ``flock /tmp/l -c ...``), or as what ``find -exec``, ``xargs``,
``flock FILE`` and ``runuser -u USER --`` run; and a git subcommand behind git's own options
(``git --no-pager -C . push`` is also ``git push``). :func:`inner_commands` lists each of
those commands; None when one of them cannot be read (a shell script with ``$(...)``, a shell
that reads its script from stdin or a file: ``echo 'rm -rf ~' | bash``, ``sh x.sh``, ``sudo
-s``, ``su``): the caller refuses then, the safe side.
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
    "watch": ("nd", ("--interval",), 0),
    "unbuffer": ("", (), 0),
    "fakeroot": ("ils", ("--lib", "--faked", "-s"), 0),
    "eatmydata": ("", (), 0),
    "torsocks": ("uapP", ("--user", "--pass", "--address", "--port"), 0),
    "proxychains": ("f", (), 0),
    "proxychains4": ("f", (), 0),
    "chroot": ("", ("--userspec", "--groups"), 1),
    "unshare": ("SGRwl", ("--setuid", "--setgid", "--root", "--wd", "--load-interp"), 0),
    "strace": ("abeEIopPsSuUX", (), 0),
    "ltrace": ("aAeEfLnopsSuxX", (), 0),
    "prlimit": ("p", ("--pid",), 0),
    "setpriv": ("", (), 0),
    "systemd-run": ("pEMuHs", ("--property", "--setenv", "--machine", "--unit", "--host",
                               "--slice", "--description", "--uid", "--gid", "--working-directory"),
                    0),
    "valgrind": ("", (), 0),
    "firejail": ("", (), 0),
}  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"})
_SHELL_LONG_VALUES = frozenset({"--rcfile", "--init-file"})
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
# Programs that run a command given to their -c through a shell (script, su, sg, runuser).
_COMMAND_RUNNERS = frozenset({"script", "su", "sg", "runuser"})
_GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--attr-source", "--super-prefix",
     "--config-env", "--exec-path", "--list-cmds"}
)  # fmt: skip
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
        elif program in (".", "source") and len(words) > 1 and words[1] in _STDIN_FILES:
            return None  # echo 'rm -rf x' | source /dev/stdin
        elif program == "eval":
            inner = _parsed(" ".join(words[1:]), parse, depth)
            words = []
        elif program == "find":
            inner = _find_commands(words[1:], parse, depth)
            words = []
        elif program in _COMMAND_RUNNERS:
            inner = _command_option(words[1:], parse, depth)
            # runuser -u USER [--] COMMAND runs it without a shell; without -c, any of them
            # runs a shell that reads its script from stdin (echo 'rm -rf x' | su)
            words = _runuser_command(words[1:]) if program == "runuser" and inner == [] else []
            if inner == [] and not words:
                return None
        elif program == "flock":
            words, inner = _flock(words[1:], parse, depth)
        elif program == "git" and (plain := _git_plain(words)) is not None:
            found.append(plain)
            words = []
        elif program in _WRAPPERS:
            arguments = words[1:]
            words, inner = _after_wrapper(program, arguments, parse, depth)
            if not words and inner == [] and _login_shell(program, arguments):
                return None  # sudo -s, sudo -i: a shell that reads its script from stdin
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
    """The commands of ``sh -c SCRIPT`` (also ``-ec``, ``-lc``, ``-o errexit -c``, ``-c --``,
    ``--rcfile x -c``: options stand before and after ``-c``, and ``-o``/``-O`` and a few long
    ones take the next word); None for one that reads its script from stdin (``echo 'rm -rf
    x' | sh``, ``bash -s``) or a file (``sh x.sh``): what it runs cannot be read here, so a
    deny rule refuses it and no allow rule covers it."""
    command = stdin = False
    words = iter(arguments)
    for word in words:
        if word == "--" or word in ("-", "+"):
            stdin = stdin or word == "-"
            break
        if word.startswith("--"):
            if word in _SHELL_LONG_VALUES:
                next(words, "")
            elif word == "--command":
                command = True
            continue
        if not word.startswith(("-", "+")):
            if command:
                return _parsed(word, parse, depth)
            # bash -s x: x is an argument, the script is stdin; bash x.sh runs a file's
            # script: what either runs cannot be read here
            return None
        letters = word[1:]
        command = command or (word[0] == "-" and "c" in letters)
        stdin = stdin or (word[0] == "-" and "s" in letters)
        if letters and letters[-1] in "oO":  # -o NAME, +O NAME, -eo NAME
            next(words, "")
    script = next(words, None)
    if command:
        return _parsed(script or "", parse, depth)
    return None  # a script from stdin or a file (bash -- x.sh)


def _command_option(arguments: list[str], parse: Parse, depth: int) -> list[list[str]] | None:
    """What ``script -c CMD``, ``su -c CMD`` or ``sg GROUP -c CMD`` runs through a shell
    ([]: no ``-c``)."""
    for index, word in enumerate(arguments):
        following = arguments[index + 1] if index + 1 < len(arguments) else ""
        if word.startswith("--command"):
            _name, equals, value = word.partition("=")
            return _parsed(value if equals else following, parse, depth)
        if word.startswith("-") and not word.startswith("--") and "c" in word:
            attached = word[word.index("c") + 1 :]
            return _parsed(attached or following, parse, depth)
    return []


def _login_shell(program: str, arguments: list[str]) -> bool:
    """Whether ``sudo``/``doas`` is told to start a shell (``-s``, ``-i``, ``--shell``,
    ``--login``)."""
    if program not in ("sudo", "doas"):
        return False
    for word in arguments:
        if word in ("--shell", "--login"):
            return True
        if word.startswith("-") and not word.startswith("--") and set(word[1:]) & set("si"):
            return True
    return False


_RUNUSER_VALUES = frozenset({"-u", "-g", "-G", "-s", "-w", "--user", "--group", "--supp-group",
                             "--shell", "--whitelist-environment"})  # fmt: skip


def _runuser_command(arguments: list[str]) -> list[str]:
    """The command ``runuser -u USER [--] COMMAND`` runs (nothing without ``-u``)."""
    if not any(w in ("-u", "--user") or w.startswith("--user=") for w in arguments):
        return []
    index = 0
    while index < len(arguments) and arguments[index].startswith("-"):
        option = arguments[index]
        index += 1
        if option == "--":
            break
        if option in _RUNUSER_VALUES:
            index += 1
    return arguments[index:]


def _flock(
    arguments: list[str], parse: Parse, depth: int
) -> tuple[list[str], list[list[str]] | None]:
    """What ``flock [options] FILE COMMAND...`` or ``flock [options] FILE -c SCRIPT`` runs (a
    ``-c`` before the file is read as well: the safe side)."""
    index = 0
    while index < len(arguments):
        option = arguments[index]
        if option in ("-c", "--command") or option.startswith("--command="):
            script = option.partition("=")[2] or (
                arguments[index + 1] if index + 1 < len(arguments) else ""
            )
            return [], _parsed(script, parse, depth)
        if not option.startswith("-") or option == "-":
            break
        index += 1
        if option == "--":
            break
        if option in ("--timeout", "--wait", "--conflict-exit-code") or (
            not option.startswith("--") and option[-1] in "wE"
        ):
            index += 1
    rest = arguments[index + 1 :]  # past the lock's file or folder
    if rest[:1] and (rest[0] in ("-c", "--command") or rest[0].startswith("--command=")):
        return _flock(rest, parse, depth)
    return rest, []


def _git_plain(words: list[str]) -> list[str] | None:
    """``git -C dir --no-pager -c x=y push`` as ``git push``: what a deny rule for a git
    subcommand (``Bash(git push:*)``) is matched against too; None when nothing was skipped."""
    index = 1
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in _GIT_GLOBAL_VALUES else 1
    return ["git", *words[index:]] if index > 1 else None


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
