"""What a command an allow rule matched can make run beyond what the rule names.

A rule such as ``Bash(find:*)`` or ``Bash(sed:*)`` is written for a program; the program can be
told, on the same line, to run another one or to write a file the line names: ``find -exec``,
``rg --pre``, ``fd -x``, sed's ``e`` command, awk's ``system()``. :func:`runs_beyond` and
:func:`takes_options_from_globs` find those, so :mod:`agentsh.tools.rules` does not let the
rule cover them; git's own are in :mod:`agentsh.tools.rule_git`.
"""

from __future__ import annotations

import re

# Programs that only read or list, with the options that make them run a program the command
# line names, delete, or write a file it names (as Claude Code, ``Bash(find:*)`` does not
# cover ``find -exec`` or ``-delete``). A rule that names the option itself does.
_FIND_ACTIONS = "-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls"
_FD_EXEC = ("-x", "--exec", "-X", "--exec-batch")
_READER_RUNNERS: dict[str, tuple[str, ...]] = {
    "find": tuple(_FIND_ACTIONS.split()),
    "rg": ("--pre", "--hostname-bin"),
    "fd": _FD_EXEC,
    "fdfind": _FD_EXEC,  # Debian's name for fd
    # sort writes -o FILE and runs --compress-program; tree writes -o FILE
    "sort": ("-o", "--output", "--compress-program"),
    "tree": ("-o",),
    # tar -tf (a listing) runs a decompressor it is given, or a script at each checkpoint
    "tar": (*("-I", "--use-compress-program", "--to-command", "--checkpoint-action", "-F"),
            *("--info-script", "--new-volume-script", "--rsh-command", "--rmt-command")),
}  # fmt: skip
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# What in an awk program runs a command or writes a file: system(), a pipe to or from a
# command (one "|", not "||"), print or printf redirected with ">", gawk's extensions.
_AWK_RUNS = re.compile(
    r"\bsystem\s*\(|(?<!\|)\|(?!\|)|\bprintf?\b[^;}\n]*>|@load|@include|\bextension\s*\("
)
# awk's options (gawk's, which include POSIX's and mawk's -W): "" a switch, "arg" takes a
# value, "program" takes a program's text, "runs" runs a file's code or writes a file.
_AWK_SHORT = {
    **dict.fromkeys("bcCghLMnNOPrsStV", ""),
    **dict.fromkeys("FvW", "arg"),
    "e": "program",
    **dict.fromkeys("fEildDop", "runs"),
}
_AWK_LONG = {
    **dict.fromkeys(("characters-as-bytes", "traditional", "compat", "copyright", "gen-pot"), ""),
    **dict.fromkeys(("help", "usage", "lint", "bignum", "non-decimal-data", "optimize"), ""),
    **dict.fromkeys(("no-optimize", "posix", "re-interval", "sandbox", "use-lc-numeric"), ""),
    **dict.fromkeys(("version", "csv", "lint-old", "trace"), ""),
    **dict.fromkeys(("assign", "field-separator"), "arg"),
    "source": "program",
    **dict.fromkeys(("file", "exec", "include", "load", "dump-variables", "debug"), "runs"),
    **dict.fromkeys(("profile", "pretty-print"), "runs"),
}


def takes_options_from_globs(command: str, programs: list[str]) -> bool:
    """Whether one of ``programs`` (a command line's) has options that run or write, and the
    line has an unquoted glob that can expand to a word starting with ``-``: ``find . -e*ec
    sh -c id ;`` or ``find . -name x *`` where the model created a file named ``-exec`` or
    ``-delete``. Such a line is matched by no allow rule."""
    names = {program.rsplit("/", 1)[-1] for program in programs}
    if not names & (_READER_RUNNERS.keys() | _AWKS | {"git", "sed", "gsed"}):
        return False
    quote, first, index = "", "", 0
    while index < len(command):
        char, step = command[index], 1
        if quote:
            if char == quote:
                quote = ""
            else:
                step = 2 if quote == '"' and char == "\\" else 1
                first = first or command[index + step - 1]
        elif char == "\\":
            first, step = first or command[index + 1 : index + 2], 2
        elif char in "'\"":
            quote = char
        elif char.isspace() or char in ";&|<>()":
            first = ""
        elif char in "*?[" and first in ("", "-"):
            return True  # a glob at the start of a word, or in an option
        else:
            first = first or char
        index += step
    return False


def runs_beyond(words: list[str], specifier: str) -> bool:
    """Whether a simple command (its words) a rule matched is a reader (``find``, ``rg``,
    ``fd``) told by an option the rule does not name to run a program, delete or write a file
    (``find . -exec sh -c ... {} +``, ``rg --pre ./x pattern``, ``fd -x rm``), or sed given a
    script that runs a command or writes a file (:func:`sed_runs`). A rule naming the command
    exactly (no ``*``) covers it as named."""
    program = words[0].rsplit("/", 1)[-1] if words else ""
    if "*" not in specifier and " ".join(specifier.split()) == " ".join(words):
        return False
    if program in ("sed", "gsed"):
        return sed_runs(words[1:])
    if program in _AWKS:
        return awk_runs(words[1:])
    runners = _READER_RUNNERS.get(program)
    if not runners:
        return False
    named = specifier.split()
    for word in words[1:]:
        if word == "--" and program != "find":
            return False  # what follows is a pattern or a path
        for runner in runners:
            # find's primaries are whole words; rg and fd take --opt=value, fd clusters -Hx.
            gives = word == runner if program == "find" else gives_option(word, runner)
            if gives and not any(w == runner or w.startswith(runner + "=") for w in named):
                return True
    return False


def awk_runs(arguments: list[str]) -> bool:
    """Whether awk with these arguments may run a command or write a file: a program (every
    ``-e``/``--source`` one, else the first operand) with ``system()``, a pipe, ``print >
    file``, ``@load`` or ``@include``; a program read from a file (``-f``), a library loaded
    (``-l``, ``-i``, ``-E``), a file written (``-o``, ``-p``, ``-d``, ``-D``), mawk's ``-W
    exec``; or an option this reader does not know. Options are read as getopt reads them:
    clustered (``-bf x``), their value attached or the next word, long ones by any unique
    prefix (``--sou``)."""
    programs: list[str] = []
    operands: list[str] = []
    words = iter(arguments)
    for word in words:
        if word == "--":
            operands += words
            break
        if word.startswith("--"):
            name, equals, value = word[2:].partition("=")
            kind = _awk_long_option(name)
            if kind in ("arg", "program") and not equals:
                value = next(words, "")
            if kind == "program":
                programs.append(value)
            elif kind == "runs":
                return True
            continue
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        for index, flag in enumerate(word[1:], start=2):
            kind = _AWK_SHORT.get(flag, "runs")
            if kind == "runs":
                return True
            if kind in ("arg", "program"):
                value = word[index:] or next(words, "")
                if kind == "program":
                    programs.append(value)
                elif flag == "W" and _awk_long_option(value.partition("=")[0]) != "":
                    return True  # -W names a long option: mawk's exec, gawk's any
                break
    if not programs:
        programs = operands[:1]
    return any(_AWK_RUNS.search(program) for program in programs)


def _awk_long_option(name: str) -> str:
    """What a long awk option (or a unique prefix of one, as getopt takes it) does: "" a
    switch, "arg" takes a value, "program" a program's text, "runs" runs or writes (an
    unknown or ambiguous name counts as that)."""
    if name in _AWK_LONG:
        return _AWK_LONG[name]
    kinds = {kind for option, kind in _AWK_LONG.items() if option.startswith(name)}
    return kinds.pop() if name and len(kinds) == 1 else "runs"


def sed_runs(arguments: list[str]) -> bool:
    """Whether sed with these arguments may run a command or write a file it names: a script
    with GNU sed's ``e`` command or ``s///e`` flag, ``w``/``W`` or ``s///w``, a script read
    from a file (``-f``), or anything this reader cannot follow. ``--sandbox`` refuses them.
    Options are read wherever they stand (GNU's order: ``sed p -e '1e id' f`` is a script)."""
    scripts: list[str] = []
    operands: list[str] = []
    words = iter(arguments)
    for word in words:
        if word == "--":
            operands += words
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        name, equals, value = word.partition("=")
        if name.startswith("--"):  # getopt takes any unambiguous prefix of a long option
            if _long(name, "--sandbox", 4):
                return False
            if _long(name, "--file", 4):
                return True
            if _long(name, "--expression", 3):
                scripts.append(value if equals else next(words, ""))
            elif _long(name, "--line-length", 3) and not equals:
                next(words, "")
            continue
        for position, flag in enumerate(word[1:], 1):
            if flag in "efl":
                rest = word[position + 1 :] or next(words, "")
                if flag == "f":
                    return True
                if flag == "e":
                    scripts.append(rest)
                break
            if flag == "i":
                break  # -i[SUFFIX]
            if flag not in "nrEsuzb":
                return True
    return any(_script_runs(script) for script in scripts or operands[:1])


def _long(name: str, option: str, shortest: int) -> bool:
    return len(name) >= shortest and option.startswith(name)


_SED_PLAIN = frozenset("=dDgGhHnNpPxzF{}")  # {} after an address: a block


def _script_runs(script: str) -> bool:
    """Whether a sed script holds ``e``, ``w``/``W`` (as commands or ``s`` flags); True too
    when it cannot be read to the end (the safe side)."""
    text, index = script, 0
    while index < len(text):
        char = text[index]
        if char in " \t\n;{}!":
            index += 1
            continue
        index = _past_address(text, index)
        if index < 0 or index >= len(text):
            return index < 0
        command = text[index]
        index += 1
        if command in "ewW":
            return True
        if command == "s" or command == "y":
            index = _past_delimited(text, index, 2)
            if index < 0:
                return True
            flags = ""
            while command == "s" and index < len(text) and text[index] not in ";\n}":
                flags += text[index]
                index += 1
            if "e" in flags or "w" in flags or "W" in flags:
                return True
        elif command in "aicrRbtTv:#":
            # text, a file to read, a label or a comment: to the end of the line (a, i, c) or
            # of the command
            stops = "\n" if command in "aicrR#" else ";\n}"
            while index < len(text) and text[index] not in stops:
                index += 2 if text[index] == "\\" else 1
        elif command in "qQlL":
            while index < len(text) and text[index].isdigit():
                index += 1
        elif command not in _SED_PLAIN:
            return True
    return False


def _past_address(text: str, index: int) -> int:
    """Where the command after an address (or two, with ``!``) starts; -1 if unreadable."""
    for _second in range(2):
        char = text[index] if index < len(text) else ""
        if char.isdigit():
            while index < len(text) and (text[index].isdigit() or text[index] == "~"):
                index += 1
        elif char == "$":
            index += 1
        elif char in "/\\":
            if char == "\\":
                index += 1
            index = _past_delimited(text, index, 1)
            if index < 0:
                return -1
            while index < len(text) and text[index] in "IM":
                index += 1
        elif char in "+~" and _second:
            index += 1
            while index < len(text) and text[index].isdigit():
                index += 1
        while index < len(text) and text[index] in " \t":
            index += 1
        if index < len(text) and text[index] == "," and not _second:
            index += 1
            while index < len(text) and text[index] in " \t":
                index += 1
            continue
        break
    while index < len(text) and text[index] in " \t!":
        index += 1
    return index


def _past_delimited(text: str, index: int, parts: int) -> int:
    """Past ``parts`` parts closed by the delimiter at ``index`` (``/a/b/`` for two); -1 when
    one is not closed."""
    if index >= len(text) or text[index] in "\\\n":
        return -1
    delimiter = text[index]
    index += 1
    for _part in range(parts):
        while index < len(text) and text[index] != delimiter:
            index += 2 if text[index] == "\\" else 1
        if index >= len(text):
            return -1
        index += 1
    return index


def gives_option(word: str, runner: str) -> bool:
    """Whether the word hands git the option (or sub-subcommand) ``runner``, every way git's
    option parser takes one: as written, with ``=value``, a long option cut to any prefix of
    its name (``--upl`` is ``--upload-pack``, ``--exe`` is ``--exec``), a short one with its
    value attached (``-x'cmd'``) or after other short flags (``-ix`` is ``-i -x``)."""
    if not runner.startswith("-"):
        return word == runner
    if runner.startswith("--"):
        name = word.split("=", 1)[0]
        return len(name) > 2 and name.startswith("--") and runner.startswith(name)
    return word.startswith("-") and not word.startswith("--") and runner[1] in word[1:]
