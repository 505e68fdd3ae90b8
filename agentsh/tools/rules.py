"""Allow and deny rules for tool calls, in Claude Code's syntax (``--allowedTools``).

A rule names a tool and, optionally, what the call is about::

    Bash                  every command            Edit             every file edit or write
    Bash(git:*)           commands starting with   Edit(src/**)     edits of files under src/
                          the word(s) "git"        Read(./.env)     reading .env (deny it)
    Bash(npm run test)    exactly this command     mcp__github      every tool of that server
    Bash(pytest *)        a glob over the command  mcp__github__*   the same, as a glob

The tool part is an agentsh tool name (``bash``, ``edit``, ``write``, ``read``, ``grep``,
``find``, ``ls``, ``memory``, ...), a Claude Code name (``Bash``, ``Edit`` (edit and write),
``Write``, ``Read`` (every reading tool), ``Grep``, ``Glob``, ``LS``), or a glob over tool names;
``mcp__<server>`` alone means every tool of that server, as in Claude Code. The server is named
as configured (``mcp__my.server__*``), not as its tools' cleaned names spell it: two servers may
clean to one prefix (``my.server``, ``my..server``), and a rule for one that is not configured
must not cover another (a server
named with ``__`` is reached by a glob only: the server part ends at the first ``__``).
A path specifier is
a glob (``*`` inside one folder, ``**`` across folders) relative to the working folder;
``/path`` is relative to the project root, ``//path`` absolute, ``~/path`` under the home folder.

A command matches a ``Bash(...)`` allow rule only when every part of it does (``git status &&
rm -rf x`` is not ``git:*``), and a command whose parts cannot be told apart (``$(...)``,
backticks, redirections, a subshell) matches no allow rule, nor does one whose words bash would
make up from an expansion (``git $U-c core.fsmonitor=... status``, ``git {-c,alias.x=!sh} x``:
the rule would be matched against other words than the ones that run), nor does git told to run a
program or write a file it names (``git -c core.fsmonitor=...``, ``--config-env``,
``--exec-path``, ``rebase --exec``, ``submodule foreach``, ``--upload-pack``, ``log --output``,
``difftool``...) or pointed at another repository (``-C``, ``--git-dir``, ``--work-tree``,
``--bare``, an unknown global option; a ``push``, ``fetch``, ``clone``... to or from one on
this machine, named or through a configured remote, whose hooks then run:
:mod:`agentsh.tools.rule_remote`), told to set a setting or print a password (``config``,
``credential``), nor any command given a path outside the project or run after a ``cd`` out
of it (:mod:`agentsh.tools.rule_paths`), nor a shell running a script file or its stdin,
nor a reader told to run a program, delete or write (``find -exec``/``-delete``/``-fprint``,
``rg --pre``, ``fd -x``) unless the rule names that option.
Deny rules look through a program's path, wrappers with their options (``sudo -u root``,
``timeout -s KILL 5``), shells' ``-c`` scripts, ``eval`` and ``find -exec``
(:mod:`agentsh.tools.rule_wrappers`), and a command they cannot see through is denied when any
specific ``Bash(...)`` deny rule exists: refusing is the safe side.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsh.errors import AgentshError
from agentsh.tools.rule_git import git_names_a_path_outside, git_told_to_run_a_program
from agentsh.tools.rule_paths import names_a_path_outside, outside_folder
from agentsh.tools.rule_programs import runs_beyond, takes_options_from_globs
from agentsh.tools.rule_wrappers import inner_commands

# Claude Code's tool names -> the agentsh tools their rules cover.
CLAUDE_CODE_NAMES: dict[str, tuple[str, ...]] = {
    "Bash": ("bash",),
    "Edit": ("edit", "write"),
    "MultiEdit": ("edit",),
    "Write": ("write",),
    "Read": ("read", "grep", "find", "ls"),
    "Grep": ("grep",),
    "Glob": ("find",),
    "LS": ("ls",),
}
_COMMAND_TOOLS = frozenset({"bash"})
_PATH_TOOLS = frozenset({"read", "write", "edit", "grep", "find", "ls"})
_RULE = re.compile(r"^([A-Za-z0-9_*?.\-]+)(?:\((.*)\))?$", re.S)
_MCP = "mcp__"
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "\n"})
_UNSAFE_TOKENS = frozenset({">", ">>", "<", "<<", "<<<", "(", ")", ">&", "<&", "&>", ">|"})


class RuleError(AgentshError, ValueError):
    """A rule that cannot be read; the message quotes it and says what is expected."""


@dataclass(frozen=True, slots=True)
class ToolRule:
    """One parsed rule: the tool-name globs it covers and the optional specifier."""

    text: str  # as the user wrote it, for messages
    tools: tuple[str, ...]
    specifier: str | None = None

    def covers(self, tool_name: str, mcp: tuple[str, str] | None = None) -> bool:
        """Whether the rule names the tool; ``mcp``: the (server, tool) of an MCP server's
        tool as configured and listed, which an ``mcp__`` rule is matched against."""
        for pattern in self.tools:
            if mcp is not None and pattern.startswith(_MCP):
                if _covers_mcp(pattern.removeprefix(_MCP), tool_name, *mcp):
                    return True
                continue
            if fnmatch.fnmatchcase(tool_name, pattern):
                return True
            server_only = pattern.startswith(_MCP) and pattern.count("__") == 1
            if server_only and tool_name.startswith(pattern + "__"):  # all of that server
                return True
        return False


def _covers_mcp(rest: str, tool_name: str, server: str, tool: str) -> bool:
    """``mcp__<rest>`` against an MCP tool: ``<server>`` (every tool of it) or
    ``<server>__<tool>``, split at the first ``__``, each part a glob over the server's
    configured name and the tool's name (as listed, or as the model calls it). Never the
    cleaned name the tool is offered under: two servers can clean to one prefix
    (``my.server``, ``my..server``), and a rule written for a server that is not configured
    (``mcp__my_server``) must not cover another that cleans to its name."""
    head, separator, tail = rest.partition("__")
    if not fnmatch.fnmatchcase(server, head):
        return False
    if not separator:
        return True
    offered = tool_name.split("__", 2)[2] if tool_name.count("__") >= 2 else ""
    return fnmatch.fnmatchcase(tool, tail) or bool(offered and fnmatch.fnmatchcase(offered, tail))


def parse_rule(text: str) -> ToolRule:
    """Read one rule (see the module docstring); raises :class:`RuleError`."""
    stripped = text.strip()
    match = _RULE.match(stripped)
    if not match:
        raise RuleError(
            f"cannot read the tool rule {text!r}: expected a tool name, optionally with a "
            'specifier in parentheses, e.g. "Bash(git:*)", "Edit(src/**)", "mcp__server__*"'
        )
    name, specifier = match.group(1), match.group(2)
    if specifier is not None:
        specifier = specifier.strip()
        if not specifier or specifier in ("*", ":*"):
            specifier = None  # Bash(*) is Bash
    tools = CLAUDE_CODE_NAMES.get(name, (name,))
    return ToolRule(stripped, tools, specifier)


def split_rules(values: Iterable[str]) -> list[str]:
    """The rules in ``--allowedTools`` values: each value may hold several, separated by
    commas or spaces outside parentheses ("Bash(git log:*) Edit,Read")."""
    rules: list[str] = []
    for value in values:
        depth = 0
        current = ""
        for char in value:
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (char == "," or char.isspace()):
                if current.strip():
                    rules.append(current.strip())
                current = ""
                continue
            current += char
        if current.strip():
            rules.append(current.strip())
    return rules


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    rule: ToolRule | None  # None: denied because a command could not be checked
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ToolRules:
    """The allow and deny rules of a run. Deny wins over allow; neither overrides the
    approval layer's own guards (writes outside the project, agentsh's settings)."""

    allow: tuple[ToolRule, ...] = ()
    deny: tuple[ToolRule, ...] = ()

    @classmethod
    def parse(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> ToolRules:
        return cls(
            tuple(parse_rule(r) for r in split_rules(allow)),
            tuple(parse_rule(r) for r in split_rules(deny)),
        )

    def __bool__(self) -> bool:
        return bool(self.allow or self.deny)

    def hidden_tools(
        self, names: Iterable[str], mcp: Mapping[str, tuple[str, str]] | None = None
    ) -> set[str]:
        """Tools a bare deny rule takes away entirely (the model is not offered them);
        ``mcp``: the (server, tool) of the MCP tools among them, by name."""
        identity = mcp or {}
        return {
            n
            for n in names
            for r in self.deny
            if r.specifier is None and r.covers(n, identity.get(n))
        }

    def check(
        self,
        tool_name: str,
        params: Any,
        cwd: Path,
        root: Path,
        *,
        mcp: tuple[str, str] | None = None,
    ) -> Verdict | None:
        """A deny or allow verdict for this call, or None when no rule speaks to it;
        ``mcp``: the tool's (server, tool) when an MCP server's (:meth:`ToolRule.covers`)."""
        call = _Call.of(tool_name, params, cwd)
        for rule in self.deny:
            if not rule.covers(tool_name, mcp):
                continue
            if rule.specifier is None:
                return Verdict(False, rule)
            hit = call.denied_by(rule.specifier, cwd, root)
            if hit is None:
                return Verdict(
                    False,
                    None,
                    f"agentsh cannot check this command against the deny rule {rule.text!r} "
                    "(it uses $(...), backticks, redirections or a subshell)",
                )
            if hit:
                return Verdict(False, rule)
        allowing = [r for r in self.allow if r.covers(tool_name, mcp)]
        if not allowing:
            return None
        if any(r.specifier is None for r in allowing):
            return Verdict(True, next(r for r in allowing if r.specifier is None))
        specifiers = [r.specifier for r in allowing if r.specifier is not None]
        if call.allowed_by(specifiers, cwd, root):
            return Verdict(True, allowing[0])
        return None


@dataclass(frozen=True, slots=True)
class _Call:
    """What a rule's specifier is matched against: a command, a path, or nothing."""

    command: str | None = None
    path: str | None = None

    @classmethod
    def of(cls, tool_name: str, params: Any, cwd: Path) -> _Call:
        if tool_name in _COMMAND_TOOLS:
            command = getattr(params, "command", None)
            return cls(command=command if isinstance(command, str) else "")
        if tool_name in _PATH_TOOLS:
            path = getattr(params, "path", None)
            return cls(path=path if isinstance(path, str) and path else ".")
        return cls()

    def denied_by(self, specifier: str, cwd: Path, root: Path) -> bool | None:
        """True when the call matches; None when a command cannot be checked."""
        if self.command is not None:
            found = command_words(self.command)
            if found is None:
                return None
            commands: list[list[str]] = []
            for words in found:
                inner = inner_commands(words, command_words)
                if inner is None:  # a shell's script that hides what runs
                    return None
                commands += inner
            candidates = [" ".join(words) for words in commands]
            if any(_command_matches(candidate, specifier) for candidate in candidates):
                return True
            if shell_expands(self.command) and any(
                set(c.split(" ", 1)[0]) & set("${}*?[") for c in candidates
            ):
                return None  # the program's name is made up when it runs (X=rm; $X -rf /)
            return False
        if self.path is not None:
            return any(_path_matches(p, specifier, cwd, root) for p in _path_forms(self.path, cwd))
        return False

    def allowed_by(self, specifiers: list[str], cwd: Path, root: Path) -> bool:
        if self.command is not None:
            found = command_words(self.command)
            if not found or shell_expands(self.command):
                return False
            parts = [" ".join(words) for words in found]
            for part, words, places in zip(parts, found, _folders(found, cwd), strict=True):
                if inner_commands(words, command_words) is None:
                    return False  # a shell fed its script from stdin or a file (sh x.sh)
                named = _named_in_rules(part, specifiers)
                git = words[0].rsplit("/", 1)[-1] == "git"
                for here in places:
                    if outside_folder(here, root) and words[0] not in _MOVES:
                        return False  # run after a cd out of the project (or not known)
                    if git_told_to_run_a_program(part, here):
                        return False
                    if git_names_a_path_outside(words, here, root):
                        return False
                    if not git and names_a_path_outside(words, here, root, named):
                        return False
            if takes_options_from_globs(self.command, [words[0] for words in found]):
                return False
            return all(
                any(_command_matches(p, s) and not runs_beyond(w, s) for s in specifiers)
                for p, w in zip(parts, found, strict=True)
            )
        if self.path is not None:
            # Allowed only when the file a link leads to is covered as well.
            forms = _path_forms(self.path, cwd)
            return all(any(_path_matches(f, s, cwd, root) for s in specifiers) for f in forms)
        return False


_MOVES = frozenset({"cd", "pushd", "popd", "chdir"})


def _named_in_rules(part: str, specifiers: list[str]) -> frozenset[str]:
    """The words the rules that match ``part`` name as written (``Bash(ls /opt:*)`` names
    ``/opt``): a path outside the project a rule names is the user's choice."""
    named: set[str] = set()
    for specifier in specifiers:
        if _command_matches(part, specifier):
            named.update(w for w in specifier.removesuffix(":*").split() if "*" not in w)
    return frozenset(named)


def _folders(found: list[list[str]], cwd: Path) -> list[tuple[Path | None, ...]]:
    """The folders each simple command may run in, following ``cd`` before it: the one it
    names and the one before (``cd x || git ...``, or a cd that fails), None where a move
    cannot be followed (``cd -``, ``popd``, a variable)."""
    places: tuple[Path | None, ...] = (cwd,)
    each: list[tuple[Path | None, ...]] = []
    for words in found:
        each.append(places)
        if words[0] in _MOVES:
            target = words[1] if len(words) > 1 else "~"
            known = words[0] != "popd" and not target.startswith(("-", "$")) and len(words) <= 2
            try:
                destination = Path(target).expanduser() if known else None
            except RuntimeError:  # ~user with no such user: a move not followed
                destination = None
            moved = tuple(
                here / destination if destination is not None and here is not None else None
                for here in places
            )
            places = tuple(dict.fromkeys(places + moved))
    return each


def command_parts(command: str) -> list[str] | None:
    """The simple commands of a command line, each normalised to single spaces; None when
    the line holds something that hides what runs (substitution, redirection, subshell)."""
    found = command_words(command)
    return None if found is None else [" ".join(words) for words in found]


def command_words(command: str) -> list[list[str]] | None:
    """The words of each simple command of a command line, unquoted as bash reads them (a
    sed script or a pattern with spaces stays one word); None as for :func:`command_parts`."""
    if "$(" in command or "`" in command or "<(" in command or ">(" in command:
        return None
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    parts: list[list[str]] = []
    words: list[str] = []
    try:
        for token in lexer:
            if token in _OPERATORS:
                if words:
                    parts.append(words)
                words = []
            elif token in _UNSAFE_TOKENS or set(token) <= set(";&|<>()"):
                return None
            else:
                words.append(token)
    except ValueError:  # an unbalanced quote
        return None
    if words:
        parts.append(words)
    return parts


# What follows a ``$`` that bash expands: a name or a digit, ``${``, ``$(``, ``$[``, a special
# parameter, ``$'...'`` (ANSI-C quoting, ``$'\\x2dc'`` is ``-c``) and ``$"..."``.
_EXPANSION_START = frozenset("_{([@*#?$!-'\"")


def shell_expands(command: str) -> bool:
    """Whether bash would make words of the command line up as it runs it: a parameter,
    arithmetic or quoting expansion (``$X``, ``${X}``, ``$'\\x2dc'``, also inside double
    quotes: ``"$U-c"`` is ``-c``) or an unquoted brace expansion (``{-c,core.pager=sh}``,
    ``{1..3}``). Single quotes, backslashes and a lone ``$`` are read as bash reads them."""
    quote = ""
    brace = separated = False
    index = 0
    while index < len(command):
        char = command[index]
        after = command[index + 1 : index + 2]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            index += 1  # the next character is literal (in double quotes: near enough)
        elif char == "$" and after and (after.isalnum() or after in _EXPANSION_START):
            if quote != '"' or after not in "'\"":  # "...$" and "$'" in quotes are literal
                return True
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char == "{":
            brace, separated = True, False
        elif brace and (char == "," or command.startswith("..", index)):
            separated = True
        elif brace and char == "}":
            if separated:
                return True
            brace = False
        elif char.isspace() or char in ";&|<>()":
            brace = False
        index += 1
    return False


def _command_matches(command: str, specifier: str) -> bool:
    if specifier.endswith(":*"):
        prefix = " ".join(specifier[:-2].split())
        return command == prefix or command.startswith(prefix + " ")
    if "*" in specifier:
        return fnmatch.fnmatchcase(command, " ".join(specifier.split()))
    return command == " ".join(specifier.split())


def _path_forms(path: str, cwd: Path) -> list[Path]:
    """The path as written (made absolute) and where it leads after links."""
    absolute = Path(path).expanduser()
    if not absolute.is_absolute():
        absolute = cwd / absolute
    lexical = Path(_normalise(str(absolute)))
    try:
        resolved = absolute.resolve()
    except (OSError, RuntimeError):
        return [lexical]
    return [lexical] if resolved == lexical else [lexical, resolved]


def _normalise(path: str) -> str:
    import os.path

    return os.path.normpath(path)


def _path_matches(path: Path, specifier: str, cwd: Path, root: Path) -> bool:
    if specifier.startswith("//"):
        base, pattern = Path("/"), specifier[2:]
    elif specifier.startswith("~/"):
        base, pattern = Path.home(), specifier[2:]
    elif specifier.startswith("/"):
        base, pattern = root, specifier[1:]
    else:
        base, pattern = cwd, specifier[2:] if specifier.startswith("./") else specifier
    try:
        relative = path.relative_to(Path(_normalise(str(base))))
    except ValueError:
        return False
    return _glob_regex(pattern.rstrip("/")).fullmatch(relative.as_posix()) is not None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` any number of folders, ``*`` and ``?`` within one; a folder covers its files."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "(?:/.*)?", re.S)
