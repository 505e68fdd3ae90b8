"""What a git command an allow rule (``Bash(git:*)``) matched can make run or reach beyond git.

git can be told, on the same line, to run another program (``-c core.fsmonitor=...``, ``rebase
--exec``, ``--upload-pack``), to obey another repository (``-C``, ``--bare``, a push to one on
this machine, whose hooks run), to set the user's own settings or print a stored password
(``config --global``, ``credential fill``), or to read or write a file outside the project
(``blame --contents ~/.ssh/id_ed25519``, ``clone URL ~/.config/autostart``).
:func:`git_told_to_run_a_program` and :func:`git_names_a_path_outside` find those, so
:mod:`agentsh.tools.rules` does not let the rule cover them.
"""

from __future__ import annotations

from pathlib import Path

from agentsh.tools.rule_paths import outside
from agentsh.tools.rule_programs import gives_option as _gives_option
from agentsh.tools.rule_remote import reaches_a_local_repository

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
    "ls-remote": ("--upload-pack", "-u"),
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
    # ... or write the user's own config and scheduler (crontab, systemd units, launchd)
    "maintenance": ("start", "register", "unregister", "stop"),
}
# Global options that take the next word as their value (``git --attr-source HEAD -c ...``:
# read as the subcommand, "HEAD" hid the ``-c`` after it); -C and the like refuse anyway.
_GIT_VALUE_OPTIONS = frozenset({"--namespace", "--attr-source", "--super-prefix"})
# Global options that change nothing git obeys (git takes them as written, no abbreviation);
# any other (``--exec-path``, ``--config-env``, ``--git-dir``, one git does not know) asks.
_GIT_PLAIN_OPTIONS = frozenset(
    {"--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--literal-pathspecs",
     "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
     "--no-advice", "--no-lazy-fetch", "--version", "-v", "--help", "-h", "--html-path",
     "--man-path", "--info-path"}
)  # fmt: skip
# Global options that point git at another repository (whose config and hooks it obeys: a
# folder the model wrote, holding a .git file that names a crafted git dir; with --bare, the
# folder itself, whose tracked ``config`` and ``info/attributes`` files name aliases, pagers
# and textconv programs that the check of the project's own .git never sees).
_GIT_ELSEWHERE = ("-C", "--git-dir", "--work-tree", "--bare")


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
        name = option.partition("=")[0]
        known = name in _GIT_VALUE_OPTIONS or name == "--list-cmds"
        if not known and option not in _GIT_PLAIN_OPTIONS and not option.startswith("-c"):
            return True  # one git does not know (it refuses), or one to be read precisely
        if option == "-c" or (option.startswith("-c") and not option.startswith("--")):
            setting = option[2:] or (words[index + 1] if index + 1 < len(words) else "")
            if not setting.lower().startswith(_HARMLESS_GIT_SETTINGS):
                return True
            index += 1 if option != "-c" else 2
            continue
        index += 2 if option in _GIT_VALUE_OPTIONS else 1  # (with "=": its own word)
    if index >= len(words):
        return False
    if words[index][:1] in ("*", "?", "["):
        return True  # a glob where the subcommand goes can match a file named "-c"
    if any(_gives_option(word, "--output") for word in words[index + 1 :]):
        return True  # every command with revision or diff options takes it (rev-list, blame...)
    if reaches_a_local_repository(words[index], words[index + 1 :], cwd):
        return True  # push, fetch, clone... to or from a repository on this machine
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
    subcommand = next((word for word in words[1:] if not word.startswith("-")), "")
    messages = subcommand in _MESSAGE_TAKERS
    message = False
    for word in words[1:]:
        if message:
            message = False
            continue
        if messages and word in ("-m", "--message"):
            message = True
            continue
        if messages and word.startswith(("--message=", "-m")):
            continue
        if word.startswith("--"):
            values = [word.partition("=")[2]] if "=" in word else []
        elif word.startswith("-"):
            # a short option's value written against it, after other flags (-F/x, -aF~/y)
            values = [word[i:] for i in range(2, len(word)) if word[i] in "/~."]
        else:
            values = [word]
        if any(outside(value, cwd, root) for value in values):
            return True
    return False


# Subcommands whose -m is a message (elsewhere it is a flag: log -m, ls-files -m)
_MESSAGE_TAKERS = frozenset({"commit", "tag", "notes", "merge", "stash", "pull"})


_CONFIG_READS = ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--list")
_CONFIG_CHANGES = ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                   "--remove-section", "--edit", "-e", "--file", "-f", "--comment")  # fmt: skip
_VALUED = ("--type", "--default", "--comment", "--blob", "-t")


def _config_only_reads(arguments: list[str]) -> bool:
    """Whether ``git config`` with these arguments only reads the repository's settings
    (``--get``, ``--list``, ``get``, ``list``). Setting one is not a git command the rule's
    user had in mind: ``git config --global 'core.fsmonitor' 'curl ...|sh'`` wrote the user's
    own ~/.gitconfig (outside the project, where the tripwire that undoes a change to
    ``.git/config`` does not look, and counted as the user's) and the next ``git status``
    ran it; ``--file`` reads or writes any file (``-f ~/.aws/credentials --list``)."""
    operands: list[str] = []
    words = iter(arguments)
    for word in words:
        if word in _VALUED:
            next(words, "")  # --type bool: "bool" is the option's, not a name or a value
        elif not word.startswith("-"):
            operands.append(word)
    for word in arguments:
        if any(_gives_option(word, option) for option in _CONFIG_CHANGES):
            return False
    if operands[:1] and operands[0] in ("set", "unset", "edit", "rename-section", "remove-section"):
        return False
    reads = any(_gives_option(word, option) for word in arguments for option in _CONFIG_READS)
    if reads or operands[:1] in (["get"], ["list"]) or _short_list(arguments):
        return True
    # ``git config user.name``, ``git config --type bool core.bare``: one name, no value
    return len(operands) == 1


def _short_list(arguments: list[str]) -> bool:
    return any(w.startswith("-") and not w.startswith("--") and "l" in w[1:] for w in arguments)
