"""The summary model's own limits, when it is not the session's model.

``[model] summary_model`` may name a smaller model than the session's (a cheap one, or another
provider's): its summary request was sized to the session model's window, so on a 128k session
with an 8k summary model every Summarize sent ~100k tokens, the provider refused it, and the
paid-for fallback archived the turns each time. :func:`summary_limits` gives the window and
output limit the request must fit: ``[model] summary_window`` when set, else litellm's figures
for that model, never more than the session's window.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.config import ModelSettings
from agentsh.llm.models import model_info


@dataclass(frozen=True, slots=True)
class SummaryLimits:
    window: int  # tokens the summary request and its reply must fit in (0: unknown)
    max_output: int  # the longest reply the model gives (0: unknown)


def summary_limits(settings: ModelSettings, session_window: int) -> SummaryLimits:
    """The summary model's limits (the session's window when it is the session's model).

    May import litellm or ask the model worker (``model_info``): call it off the UI thread.
    """
    name = settings.summary_model
    if not name or name == settings.name:
        return SummaryLimits(session_window, 0)
    info = model_info(name)  # no overrides: [model] window is the session model's
    own = settings.summary_window or (info.window if info.known else 0)
    output = info.max_output_tokens if info.known else 0
    if own <= 0:
        return SummaryLimits(session_window, output)
    if session_window > 0:
        own = min(own, session_window)
    return SummaryLimits(own, min(output, own) if output else 0)
