"""What a project's ``.agentsh/config.toml`` may not set, whatever the trust.

A project's config is hostile input: a cloned repository must not choose where your prompts,
memory and API key go, widen approval, remap the keys that answer approval prompts, or switch
off the file history. :func:`limit_project` undoes such changes after the project's file is
merged over the user's, each with a :class:`~agentsh.config_values.ConfigProblem` naming the
key; :func:`ignored_in_project` answers the same question for the trust prompt's listing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

from agentsh.config_settings import ApprovalMode, Settings
from agentsh.config_values import ConfigProblem


def limit_project(
    before: Settings, after: Settings, path: Path, problems: list[ConfigProblem]
) -> Settings:
    """``after`` (the project's file ``path`` merged over ``before``) without what a project
    may not set; each undone change is appended to ``problems``."""
    after = _no_wider_approval(before, after, path, problems)
    after = _project_limits(before, after, path, problems)
    return _own_checkpoints(before, after, path, problems)


_APPROVAL_ORDER = (ApprovalMode.ASK, ApprovalMode.EDITS, ApprovalMode.ALL)


def _no_wider_approval(
    before: Settings, after: Settings, path: Path, problems: list[ConfigProblem]
) -> Settings:
    """A project's config may ask for more approval, never less: a cloned repository must not
    let the agent run its commands unasked. Wider modes belong in the user config or
    ``--approve``."""
    old, new = ApprovalMode(before.tools.approval), ApprovalMode(after.tools.approval)
    if _APPROVAL_ORDER.index(new) <= _APPROVAL_ORDER.index(old):
        return after
    problems.append(
        ConfigProblem(
            path,
            "tools.approval",
            f"a project's config cannot widen approval (got {new.value!r}); set it in your user "
            f"config.toml or pass --approve {new.value}; using {old.value!r}",
        )
    )
    tools = dataclasses.replace(after.tools, approval=old.value)
    return dataclasses.replace(after, tools=tools)


# What only the user's own config (or the command line, or the environment) may set: where
# data goes and who decides. A project's config that sets one of these, trusted or not, gets
# a problem naming its file and key, and the user's value stays.
_USER_ONLY: tuple[tuple[str, str, str], ...] = (  # (section, key, what it would do)
    ("model", "name", "choose the model, and so where your prompts, memory and API key go"),
    ("model", "summary_model", "choose the summary model, which is sent the conversation"),
    ("model", "api_base", "choose the model server, which gets your prompts and API key"),
    ("model", "ollama_url", "choose the model server, which gets your prompts"),
    ("model", "input_cost_per_mtok", "set the model's prices, which --max-cost-usd counts"),
    ("model", "output_cost_per_mtok", "set the model's prices, which --max-cost-usd counts"),
    ("model", "cache_read_cost_per_mtok", "set the model's prices, which --max-cost-usd counts"),
    ("model", "cache_write_cost_per_mtok", "set the model's prices, which --max-cost-usd counts"),
    ("search", "embedding", "choose a remote embedding model, which is sent your memory"),
    ("search", "warm_process_s", "keep a process of yours running in the background"),
    ("model", "warm_worker_s", "keep a process of yours running in the background"),
    ("tui", "keys", "change key bindings, which answer approval prompts"),
)
_LOCAL_EMBEDDINGS = ("local", "none")
_MODEL_STRINGS = ("name", "summary_model", "embedding")  # litellm model strings, not URLs
_WHERE_TO_SET = {
    "name": "your user config.toml, AGENTSH_MODEL or -m",
    "api_base": "your user config.toml, AGENTSH_API_BASE or --api-base",
}

# Signs that a litellm model string names a server itself: a scheme (``oobabooga/http://...``,
# ``huggingface/https://...``), a protocol-relative ``//host``, a host with a port or a TLD,
# or a key=value such as ``api_base=``; litellm would send the prompt, memory and the API key
# of the provider there.
_URL_IN_MODEL = re.compile(
    r"(?P<url>[a-z][a-z0-9+.-]*://\S*|//\S+"
    r"|(?:api_base|base_url|api_key|endpoint|host|url)\s*[=:]\S*|os\.environ/\S*"
    r"|(?:^|/)(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\])(?::\d+)?(?:/\S*)?$"
    r"|(?:^|/)[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}:\d+(?:/\S*)?$)",
    re.IGNORECASE,
)


_DEFAULTS = Settings()


def ignored_in_project(dotted: str, value: object = None) -> bool:
    """Whether a project's config setting ``dotted`` (to ``value``) is refused whatever the
    trust: :data:`_USER_ONLY`, ``[checkpoints]`` and unknown keys. The trust question lists
    such keys as ignored, apart from the ones that would take effect."""
    section, _, key = dotted.partition(".")
    if section == "checkpoints":
        return True
    part = getattr(_DEFAULTS, section, None)
    if not dataclasses.is_dataclass(part) or key.split(".")[0] not in {
        f.name for f in dataclasses.fields(part)
    }:
        return True  # an unknown setting does nothing (its problem says so)
    for user_section, user_key, _what in _USER_ONLY:
        if section == user_section and (key == user_key or key.startswith(f"{user_key}.")):
            if section == "search" and isinstance(value, str):
                return value.strip() not in _LOCAL_EMBEDDINGS
            return True
    return False


def model_url(model: str) -> str | None:
    """The server a litellm model string carries in itself, if any (``None`` for plain names
    such as ``anthropic/claude-sonnet-4-6`` or ``ollama/llama3.1:8b``)."""
    found = _URL_IN_MODEL.search(model.strip())
    return found.group("url").lstrip("/") if found else None


def _project_limits(
    before: Settings, after: Settings, path: Path, problems: list[ConfigProblem]
) -> Settings:
    """Undo what a project's config may not set (:data:`_USER_ONLY`); a cloned repository
    must not choose where your prompts, memory and API key go, nor remap who approves."""
    for section, key, what in _USER_ONLY:
        old = getattr(getattr(before, section), key)
        new = getattr(getattr(after, section), key)
        if new == old:
            continue
        if section == "search" and str(new).strip() in _LOCAL_EMBEDDINGS:
            continue  # local or no embeddings send nothing anywhere
        carried = model_url(new) if isinstance(new, str) and key in _MODEL_STRINGS else None
        got = f"got {new!r}"
        if carried:
            got += f", a model string that carries the URL {carried}"
        where = _WHERE_TO_SET.get(key, "your user config.toml")
        problems.append(
            ConfigProblem(
                path,
                f"{section}.{key}",
                f"a project's config cannot {what} ({got}); set it in {where}; ignored",
            )
        )
        part = dataclasses.replace(getattr(after, section), **{key: old})
        after = dataclasses.replace(after, **{section: part})
    return after


def _own_checkpoints(
    before: Settings, after: Settings, path: Path, problems: list[ConfigProblem]
) -> Settings:
    """``[checkpoints]`` is the user's alone: a cloned repository must not switch off the
    history that undoes what the agent did in it, nor shrink the store so it is evicted."""
    if after.checkpoints == before.checkpoints:
        return after
    problems.append(
        ConfigProblem(
            path,
            "checkpoints",
            "a project's config cannot change [checkpoints]; set it in your user config.toml; "
            "ignored",
        )
    )
    return dataclasses.replace(after, checkpoints=before.checkpoints)


def describe_settings(raw: dict[str, object]) -> str:
    """What a project's settings would change, in one line: every key that would take
    effect (padding with harmless keys cannot push one out of sight), then those refused
    whatever the answer (the model, its server, key bindings, ...), so the line is honest."""
    pairs = sorted(_dotted_keys(raw), key=lambda pair: pair[0])
    if not pairs:
        return "agentsh settings (empty)"
    ignored = [key for key, value in pairs if ignored_in_project(key, value)]
    effective = [key for key, _value in pairs if key not in ignored]
    parts = []
    if effective:
        s = "s" if len(effective) != 1 else ""
        # All of them: padding with harmless keys must not push one out of sight.
        parts.append(f"changes {len(effective)} setting{s}: {_listed(effective, 1000)}")
    if ignored:
        parts.append(f"ignored (only your own config may set them): {_listed(ignored)}")
    return "; ".join(parts)


def _listed(keys: list[str], limit: int = 24) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys)} in all)" if len(keys) > limit else "")


def _dotted_keys(raw: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    if not isinstance(raw, dict):
        return
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and not dotted.startswith("tui.keys"):
            yield from _dotted_keys(value, f"{dotted}.")
        else:
            yield dotted, value
