"""The typed settings: one frozen dataclass per ``config.toml`` section, and their reference.

Every number in SPEC.md is a field here with the SPEC value as its default. Field bounds and
choices are declared next to the field (``_num``/``_choice``) so the validation
(:mod:`agentsh.config_values`) and the generated documentation (:func:`settings_markdown`,
docs/configuration.md) cannot drift. Reading and merging the files is :mod:`agentsh.config`;
what a project's file may not set is :mod:`agentsh.config_project`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


def _num(default: float, *, lo: float | None = None, hi: float | None = None, doc: str = "") -> Any:
    """A numeric setting with inclusive bounds."""
    return field(default=default, metadata={"lo": lo, "hi": hi, "doc": doc})


def _choice(default: str, choices: tuple[str, ...], doc: str = "") -> Any:
    return field(default=default, metadata={"choices": choices, "doc": doc})


class ApprovalMode(StrEnum):
    ASK = "ask"
    EDITS = "edits"
    ALL = "all"


#: Claude Code's permission modes (``--permission-mode``) -> agentsh's approval mode; ``plan``
#: also forbids writes and commands (:data:`agentsh.tools.approval.PLAN_INSTRUCTIONS` tells the
#: model). Here, not with the approval layer, so the TUI reads its options without importing it.
PERMISSION_MODES = {
    "default": ApprovalMode.ASK,
    "dontAsk": ApprovalMode.ASK,
    "acceptEdits": ApprovalMode.EDITS,
    "bypassPermissions": ApprovalMode.ALL,
    "plan": ApprovalMode.ASK,
}


@dataclass(frozen=True, slots=True)
class ModelSettings:
    name: str = field(
        default="",
        metadata={"doc": "litellm model string; empty: chosen from provider keys or Ollama"},
    )
    api_base: str = field(
        default="",
        metadata={"doc": "provider base URL (any OpenAI-compatible server); user config only"},
    )
    summary_model: str = field(
        default="", metadata={"doc": "model for compaction summaries; empty: the session's model"}
    )
    window: int = _num(0, lo=0, doc="context window override in tokens; 0 = from litellm")
    summary_window: int = _num(
        0, lo=0, doc="the summary model's window in tokens; 0 = from litellm (at most window)"
    )
    input_cost_per_mtok: float = _num(-1.0, lo=-1.0, doc="USD per 1M input tokens; -1 = litellm")
    output_cost_per_mtok: float = _num(-1.0, lo=-1.0, doc="USD per 1M output tokens; -1 = litellm")
    cache_read_cost_per_mtok: float = _num(
        -1.0, lo=-1.0, doc="USD per 1M cache-read tokens; -1 = litellm's, or 0.1x the input price"
    )
    cache_write_cost_per_mtok: float = _num(
        -1.0, lo=-1.0, doc="USD per 1M cache-write tokens; -1 = litellm's, or 1.25x the input price"
    )
    max_output_tokens: int = _num(0, lo=0, doc="0 = provider default")
    request_timeout_s: float = _num(600.0, lo=1.0, doc="seconds before a model call is abandoned")
    max_retries: int = _num(3, lo=0, hi=20, doc="retries on 429, 5xx, network errors and timeouts")
    retry_base_delay_s: float = _num(2.0, lo=0.0, doc="first backoff delay, doubled each retry")
    retry_max_delay_s: float = _num(60.0, lo=0.0, doc="longest backoff delay")
    ollama_url: str = field(
        default="http://127.0.0.1:11434",
        metadata={"doc": "probed when no model is configured; user config only"},
    )
    warm_worker_s: float = _num(
        300.0,
        lo=0.0,
        hi=86400.0,
        doc="seconds the warm model worker stays after the last session (0: off; user only)",
    )


@dataclass(frozen=True, slots=True)
class ToolSettings:
    approval: str = _choice(
        "ask",
        tuple(m.value for m in ApprovalMode),
        doc="a project's config may only narrow it (ask < edits < all)",
    )
    read_max_lines: int = _num(2000, lo=1, doc="lines per read call")
    read_max_bytes: int = _num(50 * 1024, lo=1024, doc="bytes per read call")
    bash_timeout_s: float = _num(120.0, lo=1.0, doc="default command timeout")
    bash_max_bytes: int = _num(50 * 1024, lo=1024, doc="tail kept in the result; full output saved")
    grep_max_matches: int = _num(100, lo=1, doc="matches per grep call")
    grep_max_line_chars: int = _num(500, lo=20, doc="a longer matching line is cut")
    find_max_results: int = _num(1000, lo=1, doc="paths per find call")
    ls_max_entries: int = _num(500, lo=1, doc="entries per ls call")
    binary_sniff_bytes: int = _num(8192, lo=512, doc="bytes inspected to detect a binary file")


@dataclass(frozen=True, slots=True)
class ContextSettings:
    engine: str = _choice("tiered", ("tiered", "pi"))
    auto_compact: bool = field(
        default=True,
        metadata={"doc": "compact at the tiers; false: only /compact and the pre-flight check"},
    )
    summary_instructions: str = field(
        default="", metadata={"doc": "added to every summary request (what to keep, stress)"}
    )
    move_to_workspace_at: float = _num(
        0.80, lo=0.0, hi=1.0, doc="usage that starts MoveToWorkspace"
    )
    summarize_at: float = _num(0.85, lo=0.0, hi=1.0, doc="usage that starts Summarize")
    truncate_at: float = _num(0.95, lo=0.0, hi=1.0, doc="usage that starts Truncate")
    move_to_workspace_keep_turns: int = _num(10, lo=1, doc="turns kept verbatim")
    summarize_keep_turns: int = _num(5, lo=1, doc="turns kept verbatim")
    truncate_keep_turns: int = _num(3, lo=1, doc="turns kept verbatim")
    kept_turns_max_tokens: int = _num(20_000, lo=1000, doc="cap on the kept turns")
    compact_target: float = _num(
        0.60, lo=0.05, hi=1.0, doc="usage a compaction leaves at most (caps the kept turns)"
    )
    prune_dedupe_min_chars: int = _num(
        200, lo=1, doc="identical outputs this long are deduplicated"
    )
    prune_old_output_min_chars: int = _num(200, lo=1, doc="older outputs this long become one line")
    prune_arg_max_chars: int = _num(200, lo=1, doc="argument strings are shortened to this")
    prune_arg_container_min_chars: int = _num(500, lo=1, doc="only in arguments longer than this")
    safety_margin: float = _num(1.2, lo=1.0, hi=3.0, doc="pre-flight multiplier on estimates")
    reserve_tokens: int = _num(
        16_384,
        lo=0,
        doc="kept free for the reply; capped by the max output and the room above truncate_at",
    )
    tool_result_max_window_fraction: float = _num(
        0.30, lo=0.01, hi=1.0, doc="pre-flight cap per tool result"
    )
    tool_result_max_chars: int = _num(16_000, lo=500, doc="pre-flight cap per tool result")
    strike_min_saving: float = _num(
        0.10, lo=0.0, hi=1.0, doc="a compaction saving less is a strike"
    )
    strikes_to_pause: int = _num(2, lo=1, doc="strikes in a row that pause auto-compaction")
    max_messages: int = _num(100, lo=4, doc="messages after the system message")
    summary_max_tokens: int = _num(4096, lo=256, doc="longest compaction summary")
    summary_timeout_s: float = _num(
        300.0, lo=1.0, doc="a summary call still running then is given up: the turns are archived"
    )
    branch_summary_max_tokens: int = _num(2048, lo=128, doc="longest branch summary")
    pre_compaction_memory_save: bool = field(
        default=False, metadata={"doc": "one memory-only model turn before a Summarize"}
    )
    pi_keep_recent_tokens: int = _num(20_000, lo=1000, doc="recent tokens the pi engine keeps")
    chars_per_token: float = _num(4.0, lo=1.0, doc="estimate for non-CJK text")


@dataclass(frozen=True, slots=True)
class MemorySettings:
    memory_char_limit: int = _num(2200, lo=100, doc="MEMORY.md size limit")
    user_char_limit: int = _num(1375, lo=100, doc="USER.md size limit")
    prior_knowledge_docs: int = _num(5, lo=0, doc="typed docs in the first prompt")
    prior_knowledge_chars: int = _num(500, lo=50, doc="characters per prior-knowledge doc")
    guard_max_scan_bytes: int = _num(64 * 1024, lo=1024, doc="text the injection guard scans")
    agents_md_max_bytes: int = _num(32 * 1024, lo=1024, doc="AGENTS.md budget in all")
    max_failed_writes_per_turn: int = _num(3, lo=1, doc="memory tool attempts per turn")


@dataclass(frozen=True, slots=True)
class SearchSettings:
    chunk_tokens: int = _num(400, lo=16, doc="tokens per indexed chunk")
    chunk_overlap_tokens: int = _num(80, lo=0, doc="overlap between chunks")
    vector_weight: float = _num(0.7, lo=0.0, doc="normalised with keyword_weight")
    keyword_weight: float = _num(0.3, lo=0.0, doc="normalised with vector_weight")
    max_results: int = _num(6, lo=1, hi=100, doc="results per search")
    min_score: float = _num(0.35, lo=0.0, hi=1.0, doc="fused or keyword score needed")
    candidates_cap: int = _num(200, lo=1, doc="candidates per side at most")
    candidates_multiplier: int = _num(4, lo=1, doc="candidates per side = this x results")
    temporal_decay: bool = field(
        default=False, metadata={"doc": "older notes score less (never MEMORY.md/USER.md)"}
    )
    half_life_days: float = _num(30.0, lo=0.1, doc="temporal decay half life")
    mmr: bool = field(default=False, metadata={"doc": "re-rank results for diversity"})
    mmr_lambda: float = _num(0.7, lo=0.0, hi=1.0, doc="MMR relevance weight")
    embedding: str = field(
        default="local", metadata={"doc": "local, none, or a litellm embedding model"}
    )
    embedding_batch: int = _num(32, lo=1, doc="chunks per embedding call")
    reindex_debounce_s: float = _num(1.0, lo=0.05, doc="must stay under the 1.5 s freshness goal")
    warm_process_s: float = _num(
        300.0, lo=0.0, hi=86400.0, doc="seconds search stays warm after use (0: off; user only)"
    )


@dataclass(frozen=True, slots=True)
class TuiSettings:
    theme: str = field(default="agentsh-dark", metadata={"doc": "a shipped, Textual or user theme"})
    esc_esc_ms: int = _num(500, lo=100, hi=2000, doc="Esc Esc window that opens the tree")
    tool_preview_lines: int = _num(5, lo=1, doc="lines shown of a collapsed tool block")
    transcript_window: int = _num(200, lo=20, doc="message widgets kept mounted")
    keys: dict[str, str] = field(
        default_factory=dict,
        metadata={"doc": 'action -> key, e.g. submit = "ctrl+s" (F1 lists actions)'},
    )


@dataclass(frozen=True, slots=True)
class SessionSettings:
    fsync: str = _choice("turn", ("turn", "entry"), doc="fsync at each turn end, or per entry")


@dataclass(frozen=True, slots=True)
class McpSettings:
    startup_timeout_s: float = _num(
        10.0, lo=0.5, doc="seconds an MCP server gets to start and list its tools"
    )
    call_timeout_s: float = _num(60.0, lo=1.0, doc="seconds before an MCP tool call is abandoned")
    tool_budget: float = _num(
        0.10,
        lo=0.0,
        hi=1.0,
        doc="share of the window MCP tool definitions may take; above it they wait behind "
        "mcp_search",
    )
    result_max_bytes: int = _num(
        50 * 1024, lo=1024, doc="an MCP result's head kept in the context; the rest saved"
    )
    result_max_lines: int = _num(2000, lo=10, doc="lines of an MCP result kept in the context")
    restart_backoff_s: float = _num(
        1.0, lo=0.0, doc="wait before a crashed server's second restart, doubled each time"
    )
    restart_backoff_max_s: float = _num(60.0, lo=0.0, doc="longest wait between restarts")
    servers: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "tables": True,
            "doc": "[mcp.servers.NAME] tables: command, args, env or type, url, headers "
            "(see README, MCP)",
        },
    )


@dataclass(frozen=True, slots=True)
class CheckpointSettings:
    enabled: bool = field(
        default=True,
        metadata={"doc": "capture files at each message and before write/edit/bash; user only"},
    )
    max_file_bytes: int = _num(4 * 1024 * 1024, lo=1024, doc="larger files are not captured")
    store_max_mb: int = _num(1024, lo=16, doc="all projects' checkpoint stores together")


@dataclass(frozen=True, slots=True)
class AcpSettings:
    permission_timeout_s: float = _num(
        300.0,
        lo=1.0,
        doc="agentsh acp: seconds an editor gets to answer an approval request; then it is "
        "refused as unanswered",
    )
    editor_timeout_s: float = _num(
        30.0,
        lo=1.0,
        doc="agentsh acp: seconds an editor gets to answer a file read, write or new terminal",
    )


@dataclass(frozen=True, slots=True)
class Settings:
    model: ModelSettings = field(default_factory=ModelSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    tui: TuiSettings = field(default_factory=TuiSettings)
    session: SessionSettings = field(default_factory=SessionSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    acp: AcpSettings = field(default_factory=AcpSettings)


def documented_settings() -> list[tuple[str, Any, str]]:
    """(dotted key, default, note) for every setting; the README table is generated from it."""
    rows: list[tuple[str, Any, str]] = []
    for section in dataclasses.fields(Settings):
        default_section = getattr(Settings(), section.name)
        for f in dataclasses.fields(default_section):
            note = f.metadata.get("doc", "")
            if f.metadata.get("choices"):
                note = (note + "; " if note else "") + "one of " + ", ".join(f.metadata["choices"])
            rows.append((f"{section.name}.{f.name}", getattr(default_section, f.name), note))
    return rows


def settings_markdown() -> str:
    """The settings reference (docs/configuration.md), generated so it cannot drift."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `agentsh/config_settings.py`"
        " (`python -m agentsh.config > docs/configuration.md`).",
        "Put settings in the user `config.toml` (see the README for where it lives) or in the",
        "project's `.agentsh/config.toml`, which is merged over it. A bad value is reported with",
        "its file, key and what is allowed, and the default is used.",
        "",
    ]
    section = ""
    for key, default, note in documented_settings():
        head, _, name = key.partition(".")
        if head != section:
            section = head
            lines += ["", f"## [{head}]", "", "| key | default | notes |", "|---|---|---|"]
        shown = f"`{default!r}`".replace("|", "\\|")
        lines.append(f"| `{name}` | {shown} | {note} |")
    return "\n".join(lines) + "\n"
