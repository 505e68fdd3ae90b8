"""What a command an allow rule matched can make run beyond what the rule names.

A rule such as ``Bash(git:*)`` or ``Bash(find:*)`` is written for a program; the program can be
told, on the same line, to run another one or to write a file the line names: ``git -c
core.fsmonitor=...``, ``git rebase --exec``, ``git log --output=~/.bashrc``, ``find -exec``,
``rg --pre``, ``fd -x``, sed's ``e`` command. :func:`git_told_to_run_a_program` and
:func:`runs_beyond` find those, so :mod:`agentsh.tools.rules` does not let the rule cover them.
"""

from __future__ import annotations

import os.path
import re
from pathlib import Path

# git settings on the command line that name no program (``-c user.name=...``); any other
# ``-c`` may (core.fsmonitor, core.pager, alias.x=!sh, filter and diff drivers, include.path).
_HARMLESS_GIT_SETTINGS = ("user.", "color.", "advice.", "core.quotepath=", "init.defaultbranch=")


# What a git command line can name that git then runs (or writes): per subcommand, the
# options (or words) that do it; "" means the subcommand itself does (difftool runs a tool).
_GIT_RUNNERS: dict[str, tuple[str, ...]] = {
    "submodule": ("foreach",),
    "bisect": ("run",),
    "rebase": ("--exec", "-x"),
    "grep": ("-O", "--open-files-in-pager"),
    "clone": ("-u", "--upload-pack", "--template", "-c", "--config"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "remote": ("--upload-pack",),
    "archive": ("--exec", "--output", "-o"),
    "push": ("--receive-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"),
    "init": ("--template",),
    "log": ("--output",),
    "show": ("--output",),
    "format-patch": ("--output", "-o", "--output-directory"),
    "bundle": ("create",),
    # ... write a file the line names outside the work tree, or read one (the key, as a diff)
    "apply": ("--unsafe-paths",),
    "checkout-index": ("--prefix",),
    "merge-file": ("",),
    "diff": ("--output", "--no-index"),
    # ... run what the line names as a transport, or obey another repository's hooks
    "remote-ext": ("",),
    "receive-pack": ("",),
    "upload-pack": ("",),
    "upload-archive": ("",),
    "shell": ("",),
    "credential-store": ("",),
    "credential-cache": ("",),
    "filter-branch": ("",),
    "filter-repo": ("",),  # git-filter-repo's --*-callback options are Python code
    "difftool": ("",),
    "mergetool": ("",),
    "send-email": ("",),
    "instaweb": ("",),
    "daemon": ("",),
}
# Global options that take the next word as their value (``git --attr-source HEAD -c ...``:
# read as the subcommand, "HEAD" hid the ``-c`` after it); -C and the like refuse anyway.
_GIT_VALUE_OPTIONS = frozenset({"--namespace", "--attr-source", "--super-prefix"})
# Global options that point git at another repository (whose config and hooks it obeys: a
# folder the model wrote, holding a .git file that names a crafted git dir; with --bare, the
# folder itself, whose tracked ``config`` and ``info/attributes`` files name aliases, pagers
# and textconv programs that the check of the project's own .git never sees).
_GIT_ELSEWHERE = ("-C", "--git-dir", "--work-tree", "--bare")
# git push options that take the next word as their value
_PUSH_VALUE_OPTIONS = frozenset({"-o", "--push-option"})


def git_told_to_run_a_program(command: str, cwd: Path | None) -> bool:
    """Whether a simple command is git with options that can make it run any program (or
    write a file it names): an allow rule for git commands (``Bash(git:*)``) must not cover
    ``git -c core.fsmonitor=...``, ``git rebase --exec sh``, ``git submodule foreach``,
    ``git fetch --upload-pack=...``, ``git log --output=~/.bashrc``, ``git -C elsewhere`` or
    ``git push ./vendor/x.git`` (:func:`_pushes_to_a_local_repository`); ``cwd``: the folder
    it runs in, None when the line moves first (``cd``)."""
    words = command.split(" ")
    if not words or words[0].rsplit("/", 1)[-1] != "git":
        return False
    index = 1
    while index < len(words) and words[index].startswith("-"):
        option = words[index]
        if option.startswith(("--config-env", "--exec-path", *_GIT_ELSEWHERE)):
            return True
        if option == "-c" or (option.startswith("-c") and not option.startswith("--")):
            setting = option[2:] or (words[index + 1] if index + 1 < len(words) else "")
            if not setting.lower().startswith(_HARMLESS_GIT_SETTINGS):
                return True
            index += 1 if option != "-c" else 2
            continue
        index += 2 if option in _GIT_VALUE_OPTIONS else 1
    if index >= len(words):
        return False
    if words[index][:1] in ("*", "?", "["):
        return True  # a glob where the subcommand goes can match a file named "-c"
    if any(_gives_option(word, "--output") for word in words[index + 1 :]):
        return True  # every command with revision or diff options takes it (rev-list, blame...)
    if words[index] == "push" and _pushes_to_a_local_repository(words[index + 1 :], cwd):
        return True
    if words[index] in ("remote", "submodule") and _adds_a_local_remote(
        words[index], words[index + 1 :], cwd
    ):
        return True
    if words[index] == "config" and not _config_only_reads(words[index + 1 :]):
        return True
    if words[index].startswith("credential"):
        # ``git credential fill`` (or a helper, ``credential-libsecret get``) prints the user's
        # password for the host on its stdin, which ``git log --format=host=...%n`` can feed
        return True
    runners = _GIT_RUNNERS.get(words[index])
    if runners is None:
        return any(word.startswith("ext::") for word in words[index:])
    if "" in runners:
        return True
    for word in words[index + 1 :]:
        if word.startswith("ext::"):
            return True
        if any(_gives_option(word, runner) for runner in runners):
            return True
    return False


def git_names_a_path_outside(words: list[str], cwd: Path | None, root: Path) -> bool:
    """Whether a git command (its words) names a file or folder outside the project: git
    reads and writes what its line names wherever it is (``blame --contents ~/.ssh/id_rsa``
    and ``hash-object -w`` then ``cat-file -p`` print a key, ``commit -F`` files one;
    ``clone``, ``init`` and ``worktree add`` into ~/.config/autostart write programs there),
    which an allow rule for git commands was not written for. A path is a word (or an
    option's value) that starts with ``/`` or ``~`` or climbs with ``..``, or leads out
    through a link; with ``cwd`` None (the line moves first) any word of the first kind
    counts. A URL, a ``host:path`` and a commit message (``-m``) are not paths."""
    if not words or words[0].rsplit("/", 1)[-1] != "git":
        return False
    message = False
    for word in words[1:]:
        if message:
            message = False
            continue
        if word in ("-m", "--message"):
            message = True
            continue
        if word.startswith(("--message=", "-m")):
            continue
        value = word
        if word.startswith("--") and "=" in word:
            value = word.partition("=")[2]
        elif word.startswith("-") and len(word) > 2 and word[2] in "/~.":
            value = word[2:]  # a short option's value written against it (-F/x, -o~/y)
        elif word.startswith("-"):
            continue
        if _outside(value, cwd, root):
            return True
    return False


def _outside(value: str, cwd: Path | None, root: Path) -> bool:
    if value.startswith("file:"):
        value = value.removeprefix("file:").removeprefix("//")
    elif "://" in value or "::" in value:
        return False
    colon, slash = value.find(":"), value.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return False  # host:path, or a revision's path (HEAD:src/x)
    if value == "/dev/null":
        return False
    looks = value.startswith(("/", "~")) or ".." in value.split("/")
    if cwd is None:
        return looks
    where = os.path.normpath(cwd / Path(value).expanduser())
    if looks and not _beneath(where, os.path.normpath(root)):
        return True
    # ... or through a link inside the project (a repository can carry one to /home/...)
    return not _beneath(os.path.realpath(where), os.path.realpath(root))


def _beneath(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


_CONFIG_READS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--list")
_CONFIG_CHANGES = ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                   "--remove-section", "--edit", "-e", "--file", "-f")  # fmt: skip
_VALUED = ("--type", "--default", "--comment", "--blob", "-t")


def _config_only_reads(arguments: list[str]) -> bool:
    """Whether ``git config`` with these arguments only reads the repository's settings
    (``--get``, ``--list``, ``get``, ``list``). Setting one is not a git command the rule's
    user had in mind: ``git config --global 'core.fsmonitor' 'curl ...|sh'`` wrote the user's
    own ~/.gitconfig (outside the project, where the tripwire that undoes a change to
    ``.git/config`` does not look, and counted as the user's) and the next ``git status``
    ran it; ``--file`` reads or writes any file (``-f ~/.aws/credentials --list``)."""
    operands = [word for word in arguments if not word.startswith("-")]
    for word in arguments:
        if any(_gives_option(word, option) for option in _CONFIG_CHANGES):
            return False
    reads = any(_gives_option(word, option) for word in arguments for option in _CONFIG_READS)
    if reads or operands[:1] in (["get"], ["list"]) or _short_list(arguments):
        return True
    # ``git config user.name``: one name, no value (an option's value would count as one)
    return len(operands) == 1 and not any(_gives_option(w, o) for w in arguments for o in _VALUED)


def _short_list(arguments: list[str]) -> bool:
    return any(w.startswith("-") and not w.startswith("--") and "l" in w[1:] for w in arguments)


def _pushes_to_a_local_repository(arguments: list[str], cwd: Path | None) -> bool:
    """Whether ``git push`` with these arguments pushes to a repository on this machine: git
    runs ``receive-pack`` there, and with it that repository's hooks (``pre-receive``,
    ``update``, ``post-receive``): executable files a cloned repository can carry in any of
    its folders (``vendor/cache.git/hooks/``), which the check of the project's own .git never
    sees. A word that could name a configured remote (``origin``) is a folder when one of
    that name is there (git uses a name no remote has as a path), or when ``cwd`` is unknown."""
    words = iter(arguments)
    for word in words:
        if word == "--":
            operand = next(words, "")
            break
        if word.startswith("--repo="):
            if _local_url(word.partition("=")[2], cwd):
                return True
            continue
        if word in _PUSH_VALUE_OPTIONS:
            next(words, "")
            continue
        if not word.startswith("-"):
            operand = word
            break
    else:
        return cwd is None  # the branch's remote, in a repository the line moved to
    return _local_url(operand, cwd) if operand else cwd is None


def _adds_a_local_remote(subcommand: str, arguments: list[str], cwd: Path | None) -> bool:
    """Whether ``git remote add|set-url`` or ``git submodule add`` names a repository on this
    machine: ``git remote add v vendor/cache.git && git push v`` pushed there (the tripwire
    puts .git/config back only after the line)."""
    operands = [word for word in arguments if not word.startswith("-")]
    if not operands or operands[0] not in ("add", "set-url"):
        return False
    if subcommand == "submodule":
        urls = operands[1:2]  # (an option's value read as the URL: asks, the safe side)
    elif operands[0] == "add":
        urls = operands[-1:]
    else:
        urls = operands[2:]
    return any(_local_url(url, cwd) for url in urls)


def _local_url(url: str, cwd: Path | None) -> bool:
    """Whether git reads ``url`` (a push's repository) as a folder on this machine, as its
    ``url_is_local_not_ssh`` does: ``file://``, a path, not ``host:path`` nor a scheme's URL
    nor a ``transport::address``; a bare word is a remote's name unless a folder has it."""
    if url.startswith("file:"):
        return True
    if "::" in url or "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    if colon >= 0 and (slash < 0 or colon < slash):
        return False  # host:path, ssh
    if slash >= 0 or url.startswith((".", "~")):
        return True
    return cwd is None or (cwd / url).exists()


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
            gives = word == runner if program == "find" else _gives_option(word, runner)
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


def _gives_option(word: str, runner: str) -> bool:
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
