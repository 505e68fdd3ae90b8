"""Whether a git command reaches a repository on this machine: what ``Bash(git:*)`` must not cover.

git talks to a repository given as a path (``vendor/cache.git``, ``file:///...``, ``..``) by
running ``receive-pack`` or ``upload-pack`` in it, which obey that repository's config and
hooks (``pre-receive``, ``update``, ``post-receive``): executable files a cloned repository
can carry in any of its folders, which the check of the project's own ``.git`` never sees. So
a ``push``, ``fetch``, ``pull``, ``clone``, ``ls-remote``, ``archive --remote`` or ``remote
update|show|prune`` whose target is such a folder asks, whether the line names it or a
configured remote does (``git push evil`` with ``remote.evil.url = vendor/cache.git``, or a
``url.<base>.insteadOf`` that rewrites a network URL to one), and so does one with no target
(the branch's remote, ``--all``) when any configured remote is local. A remote a line adds or
changes (``git remote add|set-url``, ``git submodule add``) that is local asks too: it arms a
later "read-only" fetch.

A word is a configured remote's name before it is a path, as git reads it: a network remote
named ``origin`` is not the folder ``origin`` beside it. The remotes are read with agentsh's
own (disarmed) git; a configuration git cannot read in time counts as local (asking).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from agentsh.gitutil import GitError, GitStall, GitTimeout, run_git


def _options(text: str) -> frozenset[str]:
    return frozenset(text.split())


# The commands that reach another repository, with their options that take the next word.
_FETCH_VALUES = (
    "--depth --deepen --shallow-since --shallow-exclude -j --jobs --upload-pack --refmap -o "
    "--server-option --negotiation-tip --filter --recurse-submodules-default --submodule-prefix"
)
_VALUES: dict[str, frozenset[str]] = {
    "push": _options("-o --push-option --repo --receive-pack --exec"),
    "fetch": _options(_FETCH_VALUES),
    "pull": _options(_FETCH_VALUES + " -s --strategy -X --strategy-option"),
    "ls-remote": _options("-u --upload-pack --sort -o --server-option"),
    "clone": _options(
        "-b --branch -o --origin -c --config --depth --reference --reference-if-able -j --jobs "
        "--separate-git-dir --filter --template -u --upload-pack --shallow-since --bundle-uri "
        "--shallow-exclude --server-option --ref-format --revision"
    ),
}
_REMOTE_CONTACTS = frozenset({"update", "show", "prune", "set-head"})
_EVERY_REMOTE = frozenset({"--all", "--multiple"})
_CONFIG_KEYS = r"^(remote\..*\.(url|pushurl)|url\..*\.(insteadof|pushinsteadof))$"
_TIMEOUT_S = 2.0


@dataclass(slots=True)
class Remotes:
    """A repository's configured remotes (name -> URLs) and URL rewrites (prefix -> base);
    ``unknown``: its configuration could not be read (every target then counts as local)."""

    urls: dict[str, list[str]] = field(default_factory=dict)
    rewrites: list[tuple[str, str]] = field(default_factory=list)
    unknown: bool = False

    @classmethod
    def of(cls, cwd: Path) -> Remotes:
        try:
            done = run_git(
                ["config", "-z", "--get-regexp", _CONFIG_KEYS],
                cwd=cwd,
                timeout=_TIMEOUT_S,
                check=False,
                give_up=False,
            )
        except (GitTimeout, GitStall, OSError):
            return cls(unknown=True)
        except GitError:
            return cls()  # no git: the command fails as well
        found = cls()
        for entry in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
            key, _, value = entry.partition("\n")
            if key.startswith("remote."):
                name = key[len("remote.") :].rsplit(".", 1)[0]
                found.urls.setdefault(name, []).append(value)
            elif key.startswith("url."):
                found.rewrites.append((value, key[len("url.") :].rsplit(".", 1)[0]))
        return found

    def local(self, url: str) -> bool:
        """Whether git reads ``url`` (after any rewrite) as a folder on this machine."""
        return (
            self.unknown
            or is_path(url)
            or any(
                url.startswith(prefix) and is_path(base) for prefix, base in self.rewrites if prefix
            )
        )

    def any_local(self) -> bool:
        return self.unknown or any(self.local(u) for urls in self.urls.values() for u in urls)


def is_path(url: str) -> bool:
    """Whether git reads a repository's URL as a folder on this machine, as its
    ``url_is_local_not_ssh`` does: ``file:``, a path (a bare word too), not ``host:path``
    nor a scheme's URL nor a ``transport::address``."""
    if url.startswith("file:"):
        return True
    if "::" in url or "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    return not (colon >= 0 and (slash < 0 or colon < slash))


def reaches_a_local_repository(subcommand: str, arguments: list[str], cwd: Path | None) -> bool:
    """Whether ``git <subcommand> <arguments>`` run in ``cwd`` (None: a folder the line moved
    to, not known) talks to, or sets up a remote that is, a repository on this machine."""
    if subcommand in ("remote", "submodule"):
        return _adds_a_local_remote(subcommand, arguments, cwd) or (
            subcommand == "remote" and _contacts_a_local_remote(arguments, cwd)
        )
    if subcommand == "archive":
        return _archives_from_a_local_repository(arguments, cwd)
    values = _VALUES.get(subcommand)
    if values is None:
        return False
    operands: list[str] = []
    every = False
    words = iter(arguments)
    for word in words:
        if word == "--":
            operands += words
            break
        if word.startswith("--repo="):
            operands.insert(0, word.partition("=")[2])
        elif word in values:
            value = next(words, "")
            if word == "--repo":
                operands.insert(0, value)
        elif word.startswith("-"):
            every = every or word in _EVERY_REMOTE
        else:
            operands.append(word)
    if subcommand == "clone":
        return bool(operands) and is_path(operands[0])
    if cwd is None:
        return True  # which repository, and which remotes, is not known here
    remotes = Remotes.of(cwd)
    if every or not operands:
        return remotes.any_local()  # the branch's remote, or all of them
    return _target_local(operands[0], cwd, remotes)


def _target_local(word: str, cwd: Path, remotes: Remotes) -> bool:
    """A command's repository operand: a configured remote's name (its URLs), a URL or path,
    or a bare word that is neither a remote nor a folder (a group of remotes: any of them
    local counts)."""
    if word in remotes.urls:
        return any(remotes.local(url) for url in remotes.urls[word])
    if re.fullmatch(r"[\w.-]+", word):
        return (cwd / word).is_dir() or remotes.any_local()
    return remotes.local(word)


def _archives_from_a_local_repository(arguments: list[str], cwd: Path | None) -> bool:
    """``git archive --remote=REPO``: ``upload-archive`` runs in that repository."""
    for index, word in enumerate(arguments):
        if word == "--remote" or word.startswith("--remote="):
            value = word.partition("=")[2] if "=" in word else "".join(arguments[index + 1 :][:1])
            if cwd is None:
                return True
            remotes = Remotes.of(cwd)
            urls = remotes.urls.get(value, [value])
            return any(remotes.local(url) for url in urls)
    return False


def _contacts_a_local_remote(arguments: list[str], cwd: Path | None) -> bool:
    """``git remote update|show|prune|set-head`` (which fetch or list the remotes they name,
    or all of them) when one of those is local."""
    operands = [word for word in arguments if not word.startswith("-")]
    if not operands or operands[0] not in _REMOTE_CONTACTS:
        return False
    if cwd is None:
        return True
    remotes = Remotes.of(cwd)
    named = [word for word in operands[1:] if word in remotes.urls]
    if not named:
        return remotes.any_local()
    return any(remotes.local(url) for name in named for url in remotes.urls[name])


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
    rewrites = Remotes.of(cwd) if cwd is not None else Remotes(unknown=True)
    return any(is_path(url) or rewrites.local(url) for url in urls)
