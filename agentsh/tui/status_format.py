"""The status bar's text, laid out from a :class:`ContextStatus` for a given width.

Pure functions, no widgets: the bar renders what the core computed and computes nothing about
the context itself; this module only decides how to *show* it. Fields are segments with a drop
rank; when the line is too wide the lowest-ranked segment goes first, in this fixed order: the
bar graphic, the MCP tool definitions' share (``mcp 4.2k``), the compaction count and the
prompt-cache share, the model's provider prefix (``anthropic/``), the session tokens, the
branch position, the session cost, and last the model name (cut with an ellipsis). The running
turn (shown here only while a pane hides the working indicator), the approval mode when it is
not "ask", the current context figure,
the tier name, "auto-compaction paused" and a problem are never dropped (a long problem is
shortened).

Styles are Textual style strings with theme variables (``$success``...), so every theme works.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.events import ContextStatus, Tier

SEPARATOR = " │ "
BAR_CELLS = 10

#: The colour of the context bar and tier name, by tier (theme variables only).
TIER_STYLE: dict[Tier, str] = {
    Tier.NONE: "$success",
    Tier.MOVE_TO_WORKSPACE: "$accent",
    Tier.SUMMARIZE: "$warning",
    Tier.TRUNCATE: "bold $error",
}


@dataclass(frozen=True, slots=True)
class Part:
    text: str
    style: str = ""


@dataclass(frozen=True, slots=True)
class Segment:
    key: str
    parts: tuple[Part, ...]
    drop_rank: int  # lower goes first when narrow; 100 = never dropped
    shorter: Segment | None = None  # what replaces it at its rank, instead of dropping it

    @property
    def width(self) -> int:
        return sum(len(p.text) for p in self.parts)


NEVER = 100


def human_tokens(value: int) -> str:
    """Raw under 1,000, then ``1.2k``, ``45k``, ``1.2M``, ``12M``."""
    if value < 1000:
        return str(value)
    if value < 10_000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    if value < 1_000_000:
        return f"{round(value / 1000)}k"
    if value < 10_000_000:
        return f"{value / 1_000_000:.1f}M".replace(".0M", "M")
    return f"{round(value / 1_000_000)}M"


def session_tokens(status: ContextStatus) -> int:
    """The session's tokens, as the bar's ``Σ``, ``/cost`` and the session picker show them:
    input plus output over every reply in the session file, all branches (the definition the
    core's totals and the session catalog share). Not the current context, which the
    ``used / window`` figure shows."""
    return status.session_input_tokens + status.session_output_tokens


def cache_share(status: ContextStatus) -> float:
    """Percent of the session's input tokens the provider read from its prompt cache."""
    if status.session_input_tokens <= 0:
        return 0.0
    return 100.0 * status.session_cache_read_tokens / status.session_input_tokens


def human_cost(value: float) -> str:
    if value <= 0:
        return "$0.00"
    if value < 0.01:
        return f"${value:.4f}"
    return f"${value:.2f}"


def context_bar(pct: float, cells: int = BAR_CELLS) -> tuple[str, str]:
    """(filled, empty) block strings for a usage fraction in percent."""
    filled = max(0, min(cells, round(pct / 100 * cells)))
    return "█" * filled, "░" * (cells - filled)


def segments(
    status: ContextStatus, *, loading: bool = False, working: str = "", mode: Part | None = None
) -> list[Segment]:
    """Every field of the bar, in display order (``working``: the running turn, first; then
    ``mode``: the approval mode when it is not "ask")."""
    tier_style = TIER_STYLE[status.tier]
    out: list[Segment] = []
    if working:
        out.append(Segment("working", (Part(working, "bold $accent"),), NEVER))
    if mode is not None and mode.text:
        out.append(Segment("mode", (mode,), NEVER))
    model = status.model or "no model"
    short = model.rsplit("/", 1)[-1] if "/" in model else ""
    model_seg = Segment("model", (Part(short or model, "bold $primary"),), drop_rank=7)
    if short:
        model_seg = Segment("model", (Part(model, "bold $primary"),), 3, shorter=model_seg)
    out.append(model_seg)
    if loading:
        out.append(Segment("loading", (Part("loading…", "italic $foreground-muted"),), NEVER))
    if status.window > 0 and status.model:  # no model: no window to fill
        filled, empty = context_bar(status.pct)
        out.append(
            Segment(
                "bar",
                (Part(filled, tier_style), Part(empty, "$foreground-muted")),
                drop_rank=1,
            )
        )
        mark = "?" if status.estimated else ""
        used = f"{human_tokens(status.used)}{mark} / {human_tokens(status.window)}"
        out.append(
            Segment(
                "context",
                (Part(used, ""), Part(f" ({status.pct:.0f}%{mark})", tier_style)),
                NEVER,
            )
        )
        if status.mcp_tools:
            mcp = Part(f"mcp {human_tokens(status.mcp_tools)}", "$foreground-muted")
            out.append(Segment("mcp", (mcp,), drop_rank=1))
    if status.tier is not Tier.NONE:
        out.append(Segment("tier", (Part(status.tier.label, f"reverse {tier_style}"),), NEVER))
    if status.paused:
        out.append(Segment("paused", (Part("auto-compaction paused", "bold $warning"),), NEVER))
    total = session_tokens(status)
    if total or status.session_cost:
        out.append(Segment("session_tokens", (Part(f"Σ {human_tokens(total)} tok", ""),), 4))
        out.append(Segment("cost", (Part(human_cost(status.session_cost), "$secondary"),), 6))
    if status.session_cache_read_tokens:
        share = f"cache {cache_share(status):.0f} %"
        out.append(Segment("cache", (Part(share, "$secondary"),), 2))
    if status.compactions:
        word = "compaction" if status.compactions == 1 else "compactions"
        out.append(Segment("compactions", (Part(f"{status.compactions} {word}", ""),), 2))
    if status.branch_count > 1:
        out.append(
            Segment(
                "branch",
                (Part(f"branch {status.branch_index}/{status.branch_count}", "$accent"),),
                5,
            )
        )
    if status.problem:
        out.append(Segment("problem", (Part(f"⚠ {status.problem}", "bold $error"),), NEVER))
    return out


def layout(
    status: ContextStatus,
    width: int,
    *,
    loading: bool = False,
    working: str = "",
    mode: Part | None = None,
) -> list[Segment]:
    """The segments that fit in ``width`` cells, dropping and shortening in the fixed order."""
    segs = segments(status, loading=loading, working=working, mode=mode)

    def total(items: list[Segment]) -> int:
        return sum(s.width for s in items) + len(SEPARATOR) * max(0, len(items) - 1) + 2

    while total(segs) > width:
        droppable = [s for s in segs if s.drop_rank < NEVER]
        if not droppable:
            break
        victim = min(droppable, key=lambda s: s.drop_rank)
        index = segs.index(victim)
        if victim.shorter is not None:
            segs[index] = victim.shorter
        elif victim.key == "model" and len(victim.parts[0].text) > 12:
            # The model name is cut before it goes: it is the one field that names the model.
            text = victim.parts[0].text
            cut = _shorten(text, max(12, len(text) - (total(segs) - width)))
            segs[index] = Segment("model", (Part(cut, victim.parts[0].style),), NEVER)
        else:
            segs.remove(victim)
    # Still too wide (a long problem): shorten the last never-dropped segment.
    overflow = total(segs) - width
    if overflow > 0 and segs:
        last = segs[-1]
        text = last.parts[-1].text
        keep = max(4, len(text) - overflow)
        parts = (*last.parts[:-1], Part(_shorten(text, keep), last.parts[-1].style))
        segs[-1] = Segment(last.key, parts, last.drop_rank)
    return segs


def _shorten(text: str, cells: int) -> str:
    if len(text) <= cells:
        return text
    return text[: max(1, cells - 1)] + "…"


def plain(segs: list[Segment]) -> str:
    """The bar as plain text (tests, the tmux benchmark's marker)."""
    return SEPARATOR.join("".join(p.text for p in s.parts) for s in segs)
