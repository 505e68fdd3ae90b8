"""Settings loaded from TOML: the user's config.toml, then the project's over it.

Loading never fails on a bad value: each problem becomes a :class:`ConfigProblem` naming the
file, the dotted key and what is allowed, and the default is used in its place. The settings
themselves are :mod:`agentsh.config_settings`, each value's check :mod:`agentsh.config_values`,
what a project may not set :mod:`agentsh.config_project`; their names are importable from here.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

from agentsh.config_project import ignored_in_project, limit_project, model_url
from agentsh.config_settings import (
    AcpSettings,
    ApprovalMode,
    CheckpointSettings,
    ContextSettings,
    McpSettings,
    MemorySettings,
    ModelSettings,
    SearchSettings,
    SessionSettings,
    Settings,
    ToolSettings,
    TuiSettings,
    documented_settings,
    settings_markdown,
)
from agentsh.config_values import Bad, ConfigProblem, check_value
from agentsh.fsutil import LinkRefused, read_beneath
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.trust import TrustCheck, check_project
from agentsh.values import loads_toml

__all__ = [
    "AcpSettings",
    "ApprovalMode",
    "CheckpointSettings",
    "ConfigProblem",
    "ContextSettings",
    "Environment",
    "LoadedConfig",
    "McpSettings",
    "MemorySettings",
    "ModelSettings",
    "SearchSettings",
    "SessionSettings",
    "Settings",
    "ToolSettings",
    "TuiSettings",
    "documented_settings",
    "ignored_in_project",
    "load_config",
    "load_environment",
    "model_url",
    "settings_from_mapping",
    "settings_markdown",
]


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    settings: Settings
    problems: tuple[ConfigProblem, ...]
    files: tuple[Path, ...]


def load_config(user: UserPaths, project: ProjectPaths | None = None) -> LoadedConfig:
    """Read the user config, then the project config over it; never raises on bad content.

    Pass ``project`` only for a trusted folder (:mod:`agentsh.trust`). Even then the project's
    file is read without following a link out of the project, and it cannot set what
    :mod:`agentsh.config_project` keeps for the user alone."""
    problems: list[ConfigProblem] = []
    settings = Settings()
    read: list[Path] = []
    raw = _read_toml(user.config_file, problems)
    if raw is not None:
        read.append(user.config_file)
        settings = _merge(settings, raw, user.config_file, "", problems)
    if project is not None:
        path = project.config_file
        raw = _read_toml(path, problems, root=project.root)
        if raw is not None:
            read.append(path)
            before = settings
            settings = _merge(settings, raw, path, "", problems)
            settings = limit_project(before, settings, path, problems)
    return LoadedConfig(settings=settings, problems=tuple(problems), files=tuple(read))


def settings_from_mapping(raw: Mapping[str, Any], source: Path = Path("<memory>")) -> Settings:
    """Build settings from an already-parsed mapping (tests, command-line overrides)."""
    problems: list[ConfigProblem] = []
    settings: Settings = _merge(Settings(), raw, source, "", problems)
    if problems:
        raise ValueError("; ".join(str(p) for p in problems))
    return settings


#: a config file larger than this is not read (a repository's 600 MB file was read whole)
MAX_CONFIG_BYTES = 1 << 20


def _read_toml(
    path: Path, problems: list[ConfigProblem], *, root: Path | None = None
) -> dict[str, Any] | None:
    """The parsed file, or None; beneath ``root`` (a project) it is never read through a link
    out of the project. Someone else's file: capped, and nesting too deep for the parser is
    bad TOML, not a crash."""
    try:
        if root is not None:
            data = read_beneath(root, path, max_bytes=MAX_CONFIG_BYTES + 1)
        else:
            with path.open("rb") as file:
                data = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except LinkRefused as exc:
        problems.append(ConfigProblem(path, "(file)", f"not read: it {exc.explained}"))
        return None
    except OSError as exc:
        problems.append(ConfigProblem(path, "(file)", f"cannot be read: {exc.strerror}"))
        return None
    if data is None:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        problems.append(ConfigProblem(path, "(file)", "is larger than 1 MiB; ignored"))
        return None
    try:
        return loads_toml(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(ConfigProblem(path, "(file)", f"is not valid TOML ({exc}); ignored"))
        return None


def _merge(
    current: Any, raw: Mapping[str, Any], path: Path, prefix: str, problems: list[ConfigProblem]
) -> Any:
    """Return a copy of the dataclass ``current`` with the valid values of ``raw`` applied."""
    hints = get_type_hints(type(current))
    fields = {f.name: f for f in dataclasses.fields(current)}
    changes: dict[str, Any] = {}
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        spec = fields.get(key)
        if spec is None:
            known = ", ".join(sorted(fields))
            problems.append(ConfigProblem(path, dotted, f"unknown setting (known here: {known})"))
            continue
        hint = hints[key]
        old = getattr(current, key)
        if dataclasses.is_dataclass(old):
            if not isinstance(value, Mapping):
                problems.append(ConfigProblem(path, dotted, "must be a table"))
                continue
            changes[key] = _merge(old, value, path, f"{dotted}.", problems)
            continue
        checked = check_value(hint, spec.metadata, value)
        if isinstance(checked, Bad):
            problems.append(
                ConfigProblem(path, dotted, f"{checked.reason}; got {value!r}, using {old!r}")
            )
            continue
        if isinstance(old, dict) and isinstance(checked, dict):
            checked = {**old, **checked}
        changes[key] = checked
    return dataclasses.replace(current, **changes) if changes else current


@dataclass(frozen=True, slots=True)
class Environment:
    """Where agentsh runs: user folders, the project, the merged settings, and whether the
    project's own files (config, instructions, memory) are trusted and so loaded."""

    user: UserPaths
    project: ProjectPaths
    config: LoadedConfig
    trust: TrustCheck
    trusted: bool  # the check's verdict, or the user's --trust-project for this run
    trust_project: bool = False  # --trust-project: the folder as it is, for this run

    @property
    def settings(self) -> Settings:
        return self.config.settings


def load_environment(
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    *,
    trust_project: bool = False,
) -> Environment:
    """The environment of a folder. The project's files load only when the folder is trusted
    (:func:`agentsh.trust.check_project`) or ``trust_project`` says so for this run."""
    user = UserPaths.from_env(env)
    project = ProjectPaths.discover(cwd)
    check = check_project(user, project.root, cwd or Path.cwd())
    trusted = trust_project or check.trusted
    config = load_config(user, project if trusted else None)
    return Environment(
        user=user,
        project=project,
        config=config,
        trust=check,
        trusted=trusted,
        trust_project=trust_project,
    )


if __name__ == "__main__":
    print(settings_markdown(), end="")
