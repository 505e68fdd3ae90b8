"""The model the user named: ``-m``, then ``AGENTSH_MODEL``, then ``[model] name``.

These are the first steps of :func:`agentsh.llm.models.choose_model`. They never block and
import nothing heavy, so the TUI's first frame can show the name while the agent loads. The
rest of the choice (a provider's key, an Ollama server) is made by the load.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from agentsh.config import ModelSettings


class ModelSource(StrEnum):
    CLI = "command line"
    ENV = "AGENTSH_MODEL"
    CONFIG = "config"
    PROVIDER_KEY = "provider key"
    OLLAMA = "ollama"


def named_model(
    settings: ModelSettings, env: Mapping[str, str], cli_model: str | None = None
) -> tuple[str, ModelSource, str] | None:
    """(model, where it was named, in words) for the first of ``cli_model``,
    ``AGENTSH_MODEL`` and ``settings.name`` that is not blank; None when none is."""
    named: tuple[tuple[str | None, ModelSource, str], ...] = (
        (cli_model, ModelSource.CLI, "-m/--model"),
        (env.get("AGENTSH_MODEL"), ModelSource.ENV, "AGENTSH_MODEL"),
        (settings.name, ModelSource.CONFIG, "[model] name"),
    )
    for model, source, detail in named:
        if model and model.strip():
            return model.strip(), source, detail
    return None
