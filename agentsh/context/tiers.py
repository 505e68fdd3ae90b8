"""The context tiers of SPEC §4: which tier a usage falls in and what each one keeps.

| usage    | tier            | keeps verbatim | older turns                                  |
|----------|-----------------|----------------|----------------------------------------------|
| < 80 %   | none            | all            | nothing                                      |
| 80-85 %  | MoveToWorkspace | last 10 turns  | archived verbatim; a one-line pointer stays  |
| 85-95 %  | Summarize       | last 5 turns   | replaced by a structured model summary       |
| >= 95 %  | Truncate        | last 3 turns   | dropped (archived first); emergency only     |

Every number is a :class:`agentsh.config.ContextSettings` field. Kept turns are also capped at
``kept_turns_max_tokens``, and to what leaves the context at ``compact_target`` of a small
window; the cut itself is chosen in :mod:`agentsh.context.cut`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.config import ContextSettings
from agentsh.events import Tier

ORDER = (Tier.NONE, Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE)


@dataclass(frozen=True, slots=True)
class TierRule:
    tier: Tier
    threshold: float  # the usage fraction at which the tier starts
    keep_turns: int
    max_kept_tokens: int


def rule(tier: Tier, settings: ContextSettings) -> TierRule:
    """What ``tier`` keeps; ``Tier.NONE`` keeps everything."""
    match tier:
        case Tier.MOVE_TO_WORKSPACE:
            return TierRule(
                tier,
                settings.move_to_workspace_at,
                settings.move_to_workspace_keep_turns,
                settings.kept_turns_max_tokens,
            )
        case Tier.SUMMARIZE:
            return TierRule(
                tier,
                settings.summarize_at,
                settings.summarize_keep_turns,
                settings.kept_turns_max_tokens,
            )
        case Tier.TRUNCATE:
            return TierRule(
                tier,
                settings.truncate_at,
                settings.truncate_keep_turns,
                settings.kept_turns_max_tokens,
            )
    return TierRule(Tier.NONE, 0.0, 1 << 30, 1 << 62)


def kept_tokens_cap(rule: TierRule, settings: ContextSettings, window: int, fixed: int) -> int:
    """The most tokens ``rule``'s kept turns may hold: ``kept_turns_max_tokens``, and no more
    than leaves the context at ``compact_target`` of the window with the ``fixed`` part (own
    prompt, tool definitions, the summary) beside them. Below ~60k tokens the token cap alone
    (20k) is most of the window: on 4k-32k windows ten or five kept turns filled it,
    MoveToWorkspace and Summarize had nothing to free, and every compaction was a Truncate."""
    if window <= 0:
        return rule.max_kept_tokens
    room = int(window * settings.compact_target) - fixed
    return min(rule.max_kept_tokens, max(1, room))


def tier_for(fraction: float, settings: ContextSettings) -> Tier:
    """The tier a usage fraction (used / window) falls in."""
    if fraction >= settings.truncate_at:
        return Tier.TRUNCATE
    if fraction >= settings.summarize_at:
        return Tier.SUMMARIZE
    if fraction >= settings.move_to_workspace_at:
        return Tier.MOVE_TO_WORKSPACE
    return Tier.NONE


def next_tier(tier: Tier) -> Tier:
    """The next more severe tier (Truncate stays Truncate); used after a provider overflow."""
    index = ORDER.index(tier)
    return ORDER[min(index + 1, len(ORDER) - 1)]


def severity(tier: Tier) -> int:
    return ORDER.index(tier)


def parse_tier(text: str) -> Tier:
    """A tier from a user's spelling (``summarize``, ``Summarize``, ``move-to-workspace``)."""
    key = text.strip().lower().replace("-", "_").replace(" ", "_")
    aliases = {"movetoworkspace": "move_to_workspace", "archive": "move_to_workspace"}
    key = aliases.get(key, key)
    for tier in ORDER[1:]:
        if tier.value == key:
            return tier
    names = ", ".join(t.value for t in ORDER[1:])
    raise ValueError(f"unknown tier {text!r}; choose one of {names}")


def parse_compact_args(text: str) -> tuple[Tier | None, str]:
    """``/compact [tier] [instructions]``: a leading tier name, then free text that steers the
    summary (anything that is not a tier name is instructions, as in Claude Code)."""
    words = text.strip().split(maxsplit=1)
    if not words:
        return None, ""
    try:
        tier = parse_tier(words[0])
    except ValueError:
        return None, text.strip()
    return tier, words[1].strip() if len(words) > 1 else ""
