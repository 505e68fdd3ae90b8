"""Which MCP servers exist: Claude Code's JSON files and ``[mcp.servers]`` in config.toml.

Four places are read, in this order, a later definition of a name replacing an earlier one:
the user's ``config.toml`` (``[mcp.servers.NAME]``), the user's ``mcp.json`` (config dir), the
project's ``.agentsh/config.toml`` and the project's ``.mcp.json``. The JSON files have Claude
Code's shape, ``{"mcpServers": {NAME: {"command", "args", "env"} | {"type": "http" | "sse",
"url", "headers"}}}``, so one file serves both tools. Project definitions are untrusted input:
they are parsed here but started only once the user trusts the project, and what the trust
prompt shows is :meth:`ServerSpec.describe`, the exact command line as written.

``${VAR}`` and ``${VAR:-default}`` are expanded in the command, args, env, url and headers at
launch (:meth:`ServerSpec.launch`) and nowhere else, so specs, listings and error messages hold
the ``${VAR}`` text, never the value.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write, read_beneath
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.values import loads_json, loads_toml

MAX_FILE_BYTES = 1024 * 1024
MAX_SERVERS = 100
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Env keys whose values are secrets: redacted from results and never shown.
_SECRET_KEY = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
_MIN_SECRET_CHARS = 8


class Transport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"  # streamable HTTP
    SSE = "sse"


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"
    CLIENT = "client"  # given by an ACP client for one session (see spec_from_acp)


_TRANSPORT_ALIASES = {
    "stdio": Transport.STDIO,
    "http": Transport.HTTP,
    "streamable-http": Transport.HTTP,
    "streamable_http": Transport.HTTP,
    "streamablehttp": Transport.HTTP,
    "sse": Transport.SSE,
}


class ExpansionError(AgentshError, ValueError):
    """A ``${VAR}`` without a default names a variable that is not set, or a project's server
    names a secret (a model provider's key, a token, a password)."""


#: the model providers' keys besides those of agentsh.llm.models.PROVIDERS: a project's server
#: may not read any of them, trusted or not (the trust question's promise: a project never
#: chooses the model, its server, or your keys).
_MORE_MODEL_KEYS = frozenset(
    {
        "AZURE_API_KEY",
        "TOGETHERAI_API_KEY",
        "FIREWORKS_AI_API_KEY",
        "COHERE_API_KEY",
        "PERPLEXITYAI_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
    }
)
# Variable names that hold a secret besides the key-like ones (_SECRET_KEY): a personal access
# token, a connection string with its password, a private key.
_SECRET_VARIABLE = re.compile(
    r"(^|_)PAT$|(^|_)DSN$|DATABASE_URL|PRIVATE|PASS|_PWD$|JWT|CONNECTION_STRING|CONN_STR"
    # connection URLs carry a password (redis://:pw@host), a proxy's may (user:pw@proxy)
    r"|(REDIS|MONGO\w*|AMQP|RABBITMQ|BROKER|POSTGRES\w*|PG|MYSQL|MARIADB|DB|SQL\w*)_UR[LI]$"
    r"|(^|_)(HTTPS?|ALL|FTP|SOCKS)_PROXY$",
    re.IGNORECASE,
)


def model_key_variables() -> frozenset[str]:
    from agentsh.llm.models import PROVIDERS

    return _MORE_MODEL_KEYS | {provider.key_env for provider in PROVIDERS}


def secret_variable(name: str) -> bool:
    """Whether ``${name}`` is a secret a project's MCP server may not read: a model key, or a
    name that looks like a key, token, password or credential (``GITHUB_TOKEN``, ``NPM_TOKEN``,
    ``PGPASSWORD``, ``SSH_AUTH_SOCK``, ``DATABASE_URL``)."""
    return (
        name in model_key_variables()
        or bool(_SECRET_KEY.search(name))
        or bool(_SECRET_VARIABLE.search(name))
    )


@dataclass(frozen=True, slots=True)
class Launch:
    """A server's definition with every ``${VAR}`` expanded: what is actually run or called."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    url: str
    headers: dict[str, str]
    #: what each ``${VAR}`` named like a secret expanded to, wherever it was (an argument, the
    #: URL's query, an env value under any name)
    expanded_secrets: tuple[str, ...] = ()

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach the log or the screen: every header value, the env
        values whose names look like keys, tokens or passwords, and every secret ``${VAR}``'s
        value."""
        values = [*self.headers.values(), *self.expanded_secrets]
        values += [v for k, v in self.env.items() if _SECRET_KEY.search(k)]
        # "Bearer abc..." as a whole and the token alone, as either may be echoed.
        values += [v.split(None, 1)[1] for v in self.headers.values() if " " in v.strip()]
        return tuple(v.strip() for v in values if len(v.strip()) >= _MIN_SECRET_CHARS)


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One server as configured (nothing expanded); frozen so it can be compared and shared."""

    name: str
    transport: Transport
    scope: Scope
    source: Path
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    enabled: bool = True
    startup_timeout_s: float | None = None
    call_timeout_s: float | None = None
    expand: bool = True  # ${VAR} expansion at launch (not for values an ACP client passed)

    def describe(self, *, env_values: bool = False) -> str:
        """The exact command line or URL, as written (``${VAR}`` unexpanded), with the names
        of the env variables and headers it sets; ``env_values``: with what each variable is
        set to, as written (what the trust question shows: ``NODE_OPTIONS='--require
        ./x.js'`` or ``LD_PRELOAD`` change what a harmless-looking command line runs)."""
        if self.transport is Transport.STDIO:
            text = shlex.join([self.command, *self.args])
            if self.env:
                shown = (f"{k}={shlex.quote(v)}" if env_values else k for k, v in self.env)
                text += f"  (env: {', '.join(shown)})"
            if self.cwd:
                text += f"  (in {self.cwd})"
            return text
        text = f"{self.transport.value} {self.url}"
        if self.headers:
            text += f"  (headers: {', '.join(k for k, _ in self.headers)})"
        return text

    def variables(self) -> tuple[str, ...]:
        """The environment variables its definition reads through ``${VAR}``, sorted."""
        found: set[str] = set()
        for text in self._expandable():
            found.update(m.group(1) for m in _VARIABLE.finditer(text))
        return tuple(sorted(found))

    def refused_variables(self) -> tuple[str, ...]:
        """The secrets its definition reads that it may not have: a project's server never
        gets the user's keys, tokens or passwords, trusted or not (a trusted folder's
        ``.mcp.json`` could name any server, and its headers are not shown in full)."""
        if self.scope is not Scope.PROJECT or not self.expand:
            return ()
        return tuple(name for name in self.variables() if secret_variable(name))

    def _expandable(self) -> Iterable[str]:
        yield self.command
        yield from self.args
        yield self.cwd
        yield self.url
        for _key, value in (*self.env, *self.headers):
            yield value

    def launch(self, environ: Mapping[str, str] | None = None) -> Launch:
        """Expand ``${VAR}`` everywhere; raises :class:`ExpansionError` naming what is unset,
        or the model provider's key a project's server asked for."""
        environ = os.environ if environ is None else environ
        if refused := self.refused_variables():
            names = ", ".join(f"${{{k}}}" for k in refused)
            raise ExpansionError(
                f"a project's MCP server may not read {names}: your keys, tokens and "
                "passwords stay with you (define the server in your own mcp.json to pass them)"
            )
        missing: set[str] = set()
        hidden: list[str] = []

        def expand(text: str) -> str:
            if not self.expand:
                return text

            def one(match: re.Match[str]) -> str:
                name, default = match.group(1), match.group(2)
                value = environ.get(name)
                if value is None or (value == "" and default is not None):
                    if default is None:
                        missing.add(name)
                        return ""
                    return default
                if secret_variable(name):
                    hidden.append(value)
                return value

            return _VARIABLE.sub(one, text)

        launch = Launch(
            command=expand(self.command),
            args=tuple(expand(a) for a in self.args),
            env={k: expand(v) for k, v in self.env},
            cwd=expand(self.cwd),
            url=expand(self.url),
            headers={k: expand(v) for k, v in self.headers},
        )
        launch = replace(launch, expanded_secrets=tuple(hidden))
        if missing:
            names = ", ".join(f"${{{n}}}" for n in sorted(missing))
            raise ExpansionError(f"{names} {'is' if len(missing) == 1 else 'are'} not set")
        return launch


@dataclass(frozen=True, slots=True)
class McpConfig:
    """Every configured server, by scope, and the problems found reading them."""

    user: Mapping[str, ServerSpec] = field(default_factory=dict)
    project: Mapping[str, ServerSpec] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def servers(self, *, trusted: bool) -> tuple[ServerSpec, ...]:
        """The servers to run, by name: a project's definitions only when it is trusted, and
        then over the user's of the same name (the more specific one wins, as in Claude Code).
        """
        merged = dict(self.user)
        if trusted:
            merged.update(self.project)
        return tuple(merged[name] for name in sorted(merged))

    def get(self, name: str, *, trusted: bool = True) -> ServerSpec | None:
        if trusted and name in self.project:
            return self.project[name]
        return self.user.get(name)

    def project_specs(self) -> tuple[ServerSpec, ...]:
        return tuple(self.project[name] for name in sorted(self.project))


def load_mcp_config(user: UserPaths, project: ProjectPaths | None) -> McpConfig:
    """Read the four places; never raises on bad content (each problem is one line)."""
    problems: list[str] = []
    user_specs: dict[str, ServerSpec] = {}
    project_specs: dict[str, ServerSpec] = {}
    places: list[tuple[Path, Scope, bool]] = [
        (user.config_file, Scope.USER, False),
        (user.mcp_file, Scope.USER, True),
    ]
    if project is not None:
        places += [
            (project.config_file, Scope.PROJECT, False),
            (project.mcp_file, Scope.PROJECT, True),
        ]
    for path, scope, is_json in places:
        # A project's files are read beneath its root: a link out of it is not followed.
        beneath = project.root if project is not None and scope is Scope.PROJECT else None
        data = _read_bytes(path, beneath, problems, report=is_json)
        if data is None:
            continue
        raw = _parse_json(path, data, problems) if is_json else _toml_servers(data)
        if not raw:
            continue
        target = user_specs if scope is Scope.USER else project_specs
        for spec in parse_servers(raw, scope=scope, source=path, problems=problems):
            target[spec.name] = spec
    return McpConfig(user=user_specs, project=project_specs, problems=tuple(problems))


def _read_bytes(
    path: Path, beneath: Path | None, problems: list[str], *, report: bool
) -> bytes | None:
    """The file's bytes (None when absent). ``report``: a problem is this module's to tell
    (config.toml's are load_config's, which reads the same file)."""
    try:
        if beneath is not None:
            data = read_beneath(beneath, path, max_bytes=MAX_FILE_BYTES + 1)
        else:
            with path.open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:  # LinkRefused among them
        if report:
            problems.append(f"{path}: not loaded: {exc.strerror or exc}")
        return None
    if data is not None and len(data) > MAX_FILE_BYTES:
        if report:
            problems.append(f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB; ignored")
        return None
    return data


def _parse_json(path: Path, data: bytes, problems: list[str]) -> Mapping[str, Any] | None:
    try:
        doc = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{path}: not valid JSON ({exc}); ignored")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{path}: must be a JSON object with an mcpServers object; ignored")
        return None
    servers = doc.get("mcpServers")
    if servers is None:
        return None
    if not isinstance(servers, dict):
        problems.append(f"{path}: mcpServers must be an object; ignored")
        return None
    return servers


def _toml_servers(data: bytes) -> Mapping[str, Any] | None:
    """``[mcp.servers]`` of a config.toml. A broken file is load_config's to report (it reads
    the same file), so it is quietly skipped here."""
    try:
        doc = loads_toml(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    mcp = doc.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    return servers if isinstance(servers, dict) else None


def parse_servers(
    raw: Mapping[str, Any], *, scope: Scope, source: Path, problems: list[str]
) -> list[ServerSpec]:
    """Every valid entry of an ``mcpServers`` mapping; each bad one becomes a problem."""
    specs: list[ServerSpec] = []
    for index, (name, entry) in enumerate(raw.items()):
        if index >= MAX_SERVERS:
            problems.append(f"{source}: more than {MAX_SERVERS} servers; the rest are ignored")
            break
        shown = _shown_name(name)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            problems.append(
                f"{source}: server {shown}: a name is 1-64 letters, digits, '_', '-' or '.'; "
                "ignored"
            )
            continue
        try:
            specs.append(_parse_entry(name, entry, scope, source))
        except ValueError as exc:
            problems.append(f"{source}: server {shown}: {exc}; ignored")
    return specs


def _shown_name(name: object) -> str:
    text = repr(name) if not isinstance(name, str) else name
    cleaned = "".join(c if c.isprintable() else "?" for c in text)
    return repr(cleaned[:64])


def _parse_entry(name: str, entry: Any, scope: Scope, source: Path) -> ServerSpec:
    if not isinstance(entry, Mapping):
        raise ValueError("must be an object")
    kind = entry.get("type")
    if kind is None:
        transport = Transport.HTTP if "url" in entry and "command" not in entry else Transport.STDIO
    elif not isinstance(kind, str) or kind.lower() not in _TRANSPORT_ALIASES:
        raise ValueError(f"type must be stdio, http or sse (got {kind!r})")
    else:
        transport = _TRANSPORT_ALIASES[kind.lower()]
    enabled = _bool(entry, "enabled", True) and not _bool(entry, "disabled", False)
    common: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "scope": scope,
        "source": source,
        "enabled": enabled,
        "startup_timeout_s": _seconds(entry, "startup_timeout_s"),
        "call_timeout_s": _seconds(entry, "call_timeout_s"),
    }
    if transport is Transport.STDIO:
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("needs a command (or a type of http or sse with a url)")
        return ServerSpec(
            command=command,
            args=tuple(_strings(entry, "args")),
            env=tuple(_string_map(entry, "env").items()),
            cwd=_string(entry, "cwd"),
            **common,
        )
    url = entry.get("url")
    if not isinstance(url, str) or not re.match(r"(?i)https?://|\$\{", url.strip()):
        raise ValueError(f"a {transport.value} server needs an http:// or https:// url")
    headers = tuple(_string_map(entry, "headers").items())
    return ServerSpec(url=url.strip(), headers=headers, **common)


def _bool(entry: Mapping[str, Any], key: str, default: bool) -> bool:
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false")
    return value


def _seconds(entry: Mapping[str, Any], key: str) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{key} must be a positive number of seconds")
    return float(value)


def _string(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value


def _strings(entry: Mapping[str, Any], key: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of strings")
    return value


def _string_map(entry: Mapping[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"{key} must be an object of strings")
    return dict(value)


# -- servers an ACP client passes (session/new) ----------------------------------------------


def spec_from_acp(entry: Mapping[str, Any]) -> ServerSpec:
    """One server of ACP's ``session/new`` ``mcpServers``: ``{name, command, args, env:
    [{name, value}]}`` or ``{type: "http" | "sse", name, url, headers: [{name, value}]}``.

    The client is the user's editor: its servers start without the project trust question,
    and their values are taken literally (no ``${VAR}``). Raises ``ValueError`` with a message
    for the client when the entry is malformed."""
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"MCP server name {_shown_name(name)} is not 1-64 letters, digits, _ - .")
    raw: dict[str, Any] = {
        k: v for k, v in entry.items() if k in ("type", "command", "args", "url")
    }
    for key in ("env", "headers"):
        pairs = entry.get(key) or []
        if not isinstance(pairs, list) or not all(
            isinstance(p, Mapping)
            and isinstance(p.get("name"), str)
            and isinstance(p.get("value"), str)
            for p in pairs
        ):
            raise ValueError(f"MCP server {name!r}: {key} must be a list of {{name, value}}")
        raw[key] = {p["name"]: p["value"] for p in pairs}
    try:
        spec = _parse_entry(name, raw, Scope.CLIENT, Path("<acp client>"))
    except ValueError as exc:
        raise ValueError(f"MCP server {name!r}: {exc}") from exc
    return replace(spec, expand=False)


# -- editing the JSON files (agentsh mcp add / remove) ----------------------------------------


def server_entry(spec: ServerSpec) -> dict[str, Any]:
    """A spec as Claude Code writes it in ``mcpServers`` (agentsh's own keys only if set)."""
    entry: dict[str, Any]
    if spec.transport is Transport.STDIO:
        entry = {"command": spec.command, "args": list(spec.args)}
        if spec.env:
            entry["env"] = dict(spec.env)
        if spec.cwd:
            entry["cwd"] = spec.cwd
    else:
        entry = {"type": spec.transport.value, "url": spec.url}
        if spec.headers:
            entry["headers"] = dict(spec.headers)
    if not spec.enabled:
        entry["enabled"] = False
    if spec.startup_timeout_s is not None:
        entry["startup_timeout_s"] = spec.startup_timeout_s
    if spec.call_timeout_s is not None:
        entry["call_timeout_s"] = spec.call_timeout_s
    return entry


def write_server(path: Path, spec: ServerSpec) -> bool:
    """Add or replace ``spec`` in the JSON file at ``path``, keeping everything else in it.

    Returns True when an entry of that name was replaced. The file is written atomically and,
    as it may hold tokens, readable by its owner only when it is new."""
    doc = _load_for_edit(path)
    servers = doc.setdefault("mcpServers", {})
    replaced = spec.name in servers
    servers[spec.name] = server_entry(spec)
    _save(path, doc)
    return replaced


def remove_server(path: Path, name: str) -> bool:
    """Remove ``name`` from the JSON file at ``path``; False when it was not there."""
    if not path.exists():
        return False
    doc = _load_for_edit(path)
    servers = doc.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return False
    del servers[name]
    _save(path, doc)
    return True


def _load_for_edit(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        doc = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it first") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("mcpServers", {}), dict):
        raise ValueError(f"{path} has no mcpServers object; fix it first")
    return doc


def _save(path: Path, doc: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    atomic_write(path, data, mode=None if path.exists() else 0o600)
