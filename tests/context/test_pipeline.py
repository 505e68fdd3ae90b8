"""The compaction pipeline end to end through the ContextManager, with a fake summary model."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import Settings
from agentsh.context.convert import SUMMARY_HEADER
from agentsh.context.engine_protocol import SummaryReply
from agentsh.context.manager import ContextManager
from agentsh.context.preflight import Route
from agentsh.context.repair import pair_problems
from agentsh.context.workspace import DiskWorkspace, MemoryWorkspace, WorkspaceError
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    Event,
    Notice,
    Tier,
)
from agentsh.paths import UserPaths
from agentsh.session.entries import (
    AnyEntry,
    CompactionEntry,
    MessageEntry,
    Role,
    StopReason,
    ToolCall,
    Usage,
)
from agentsh.session.log import SessionError
from agentsh.session.session import Session
from tests.context.builders import SYSTEM, Step, add_turn, drive_turn, unique_output
from tests.context.conftest import GOOD_SUMMARY, FakeSummarizer, ManagerFactory

W = 100_000


def _finished(events: list[Event]) -> list[CompactionFinished]:
    return [e for e in events if isinstance(e, CompactionFinished)]


def _users_in(messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "user"]


async def _grow_until(manager: ContextManager, session: Session, pct: float, tag: str) -> None:
    n = 0
    while manager.status().pct < pct:
        n += 1
        await drive_turn(
            manager,
            session,
            f"{tag} request {n}",
            [Step("read", {"path": f"src/{tag}{n}.py"}, unique_output(4_500, f"{tag}{n}"))],
        )


async def _turn_reaching(
    manager: ContextManager, session: Session, fraction: float, request: str
) -> int:
    """One turn whose tool result takes the context to ``fraction`` of the window."""
    size = int(fraction * W) - manager.status().used - 120
    await drive_turn(
        manager,
        session,
        request,
        [Step("read", {"path": "src/big.py"}, unique_output(size, "big"))],
    )
    return size


@pytest.mark.asyncio
async def test_a_long_tool_heavy_session_crosses_80_85_and_95_percent_with_each_tiers_behaviour(
    disk_session: Session, make_manager: ManagerFactory, user_paths: UserPaths
) -> None:
    events: list[Event] = []
    summarizer = FakeSummarizer()
    written: list[Path] = []
    manager = ContextManager(
        disk_session,
        # No pruning, nor the pre-flight cut of a jump's one large output (the tier is judged
        # on what they leave): each tier's cut shows.
        _settings(
            prune_old_output_min_chars=10**9,
            reserve_tokens=10_000,
            tool_result_max_chars=100_000,
            tool_result_max_window_fraction=1.0,
        ),
        user_paths,
        model="test/model",
        window=W,
        summarize=summarizer,
        emit=events.append,
        on_summary_written=written.append,
    )
    s = disk_session

    # 80 %: MoveToWorkspace archives the older turns verbatim, no model call.
    await _grow_until(manager, s, 75, "a")
    await _turn_reaching(manager, s, 0.82, "reach eighty")
    (mtw,) = _finished(events)
    assert mtw.tier is Tier.MOVE_TO_WORKSPACE and summarizer.calls == []
    assert mtw.workspace_file.endswith("001-archive.md")
    archive = manager.workspace.read(mtw.workspace_file)
    assert "## User" in archive and "a request 1\n" in archive
    assert unique_output(4_500, "a1") in archive  # verbatim
    entry = s.get(mtw.entry_id)
    # No model call, yet the facts are there, written by code.
    assert isinstance(entry, CompactionEntry) and entry.summary.startswith(
        "## Active Task\nreach eighty\n"
    )
    assert "verbatim in `001-archive.md`" in entry.summary and "src/a1.py" in entry.files_read
    assert "`src/a1.py`" in entry.summary
    messages = manager.engine.assemble(SYSTEM)
    assert SUMMARY_HEADER in str(messages[1]["content"])
    assert 1 <= len(_users_in(messages)) - 1 <= 10
    assert manager.status().pct < 80
    assert written == [Path(mtw.workspace_file)]

    # 85 %: Summarize replaces the older turns with the structured summary.
    await _grow_until(manager, s, 75, "b")
    await _turn_reaching(manager, s, 0.88, "reach eighty-eight, verbatim `please`")
    summarize = _finished(events)[1]
    assert summarize.tier is Tier.SUMMARIZE and len(summarizer.calls) == 1
    assert summarize.workspace_file.endswith("003-summary.md")
    summary = _compaction(s, summarize.entry_id).summary
    assert summary.startswith("## Active Task\nreach eighty-eight, verbatim `please`")
    assert "`src/a1.py`" in summary and "`src/b1.py`" in summary  # merged across compactions
    assert "## Archived Turns\nTurns that left the context are in files under" in summary
    assert "verbatim in `001-archive.md`" in summary
    assert "summarized above (also saved as `003-summary.md`); verbatim in `002-archive.md`" in (
        summary
    )
    assert "marker-1" in summary
    assert "[User]: b request 1" in summarizer.last_prompt
    kept_users = _users_in(manager.engine.assemble(SYSTEM))[1:]
    assert 1 <= len(kept_users) <= 5
    assert manager.status().pct < 80

    # 95 %: Truncate drops older turns without a summary, archived first.
    await _grow_until(manager, s, 77, "c")
    size = await _turn_reaching(manager, s, 0.96, "reach ninety-six")
    assert size < 20_000
    truncate = _finished(events)[2]
    assert truncate.tier is Tier.TRUNCATE and len(summarizer.calls) == 1
    assert truncate.workspace_file.endswith("004-archive.md")
    summary = _compaction(s, truncate.entry_id).summary
    assert "verbatim in `004-archive.md`" in summary and "marker-1" in summary
    assert "## Active Task\nreach ninety-six" in summary
    kept_users = _users_in(manager.engine.assemble(SYSTEM))[1:]
    assert 1 <= len(kept_users) <= 3
    assert manager.status().compactions == 3
    assert [e.tier for e in events if isinstance(e, CompactionStarted)] == [
        Tier.MOVE_TO_WORKSPACE,
        Tier.SUMMARIZE,
        Tier.TRUNCATE,
    ]


def _compaction(session: Session, entry_id: str) -> CompactionEntry:
    entry = session.get(entry_id)
    assert isinstance(entry, CompactionEntry), entry
    return entry


def _settings(**context: Any) -> Settings:
    from tests.context.conftest import settings_with

    return settings_with(**context)


def _long_session(session: Session, turns: int = 12, size: int = 3_000) -> None:
    for i in range(turns):
        add_turn(
            session,
            f"request {i}",
            [
                Step("read", {"path": f"src/f{i}.py"}, unique_output(size, f"r{i}")),
                Step("edit", {"path": f"src/f{i}.py", "old": "a", "new": "b"}, "edited"),
            ],
            f"answer {i}",
        )


def _all_requests_reachable(manager: ContextManager, session: Session) -> None:
    """Every user request is in the context verbatim or in a workspace file it points to."""
    messages = manager.engine.assemble(SYSTEM)
    text = "\n".join(str(m.get("content")) for m in messages)
    archives = ""
    for entry in session.current_path():
        if isinstance(entry, CompactionEntry) and entry.workspace_file:
            archives += manager.workspace.read(entry.workspace_file)
    for entry in session.current_path():
        if isinstance(entry, MessageEntry) and entry.role is Role.USER:
            assert (
                entry.content in text
                or f"## User ({entry.timestamp})\n\n{entry.content}" in archives
            )


@pytest.mark.asyncio
async def test_a_failed_summary_call_archives_the_turns_instead_and_loses_none(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    for mode in ("fail", "garbage", "empty"):
        session = Session.create(None, Path("/tmp"))
        _long_session(session)
        events: list[Event] = []
        manager = make_manager(session, window=W, summarize=FakeSummarizer(mode), events=events)
        entry = await manager.compact(Tier.SUMMARIZE)
        assert entry is not None and entry.tier == "move_to_workspace"
        (done,) = _finished(events)
        assert "summary failed" in done.note and "archived instead" in done.note
        if mode == "fail":
            assert "ConnectionError: the summary model is unreachable" in done.note
        # What the model said instead, in a word: a refusal or a reply is quoted (its start).
        if mode == "garbage":
            assert "not a summary: “Sure! I'll continue fixing the tests now.”" in done.note
        if mode == "empty":
            assert "the model's reply was empty" in done.note
        assert done.workspace_file.endswith("001-archive.md")
        _all_requests_reachable(manager, session)
        assert manager.status().problem == ""


@pytest.mark.asyncio
async def test_a_summary_larger_than_what_it_replaces_archives_the_turns_and_counts_the_call(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A verbose summary model made Summarize "not applied" at every turn: a paid call that
    freed nothing, lost with its cost when the `-p` process ended, and again at the next one.
    The turns it covered are archived instead, and the call counts."""
    _long_session(memory_session, turns=6)  # one turn leaves: its summary must be short
    verbose = GOOD_SUMMARY.format(n=1) + "\n".join(
        f"- detail {i}: " + "what happened, at length " * 8 for i in range(60)
    )  # within the summary's budget, as long as what it replaces

    async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> SummaryReply:
        return SummaryReply(verbose, Usage(input_tokens=30_000, output_tokens=60_000, cost=0.5))

    events: list[Event] = []
    manager = make_manager(memory_session, window=W, summarize=summarize, events=events)
    entry = await manager.compact(Tier.SUMMARIZE)
    assert entry is not None and entry.tier == "move_to_workspace"
    assert entry.tokens_after < entry.tokens_before
    (done,) = _finished(events)
    assert "the summary would free under 10%" in done.note and "archived instead" in done.note
    assert entry.usage is not None and entry.usage.cost == 0.5
    assert manager.status().session_cost >= 0.5


@pytest.mark.asyncio
async def test_a_summary_over_its_budget_archives_the_turns_and_never_enters_the_context(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A model (or proxy) that ignores max_tokens: a 32k -p drive kept a 20,000-word summary
    (it still freed a third of the context); it stayed in every later context, even each
    Truncate's, and from then on every turn compacted and freed next to nothing. Over its
    budget, the turns are archived verbatim instead, and the user is told why."""
    _long_session(memory_session)
    huge = GOOD_SUMMARY.format(n=1) + "\n## Critical Context\n" + "blah " * 6_000

    async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> str:
        return huge

    events: list[Event] = []
    manager = make_manager(memory_session, window=32_768, summarize=summarize, events=events)
    entry = await manager.compact(Tier.SUMMARIZE)
    assert entry is not None and entry.tier == "move_to_workspace"
    assert "blah blah" not in entry.summary
    (done,) = _finished(events)
    assert "summary failed (the summary ran to" in done.note
    assert "over its budget of 3,276)" in done.note and "archived instead" in done.note
    assert done.archive_file.endswith("001-archive.md") and not done.summary_file
    assert "blah blah" not in str(manager.engine.assemble(SYSTEM))
    _all_requests_reachable(manager, memory_session)


@pytest.mark.asyncio
async def test_an_unwritable_workspace_leaves_every_turn_in_the_context_and_retries_next_turn(
    disk_session: Session, make_manager: ManagerFactory, user_paths: UserPaths
) -> None:
    s = disk_session
    _long_session(s)
    # The workspace folder cannot be created: a file is in its way (works as root too).
    user_paths.workspace_dir.mkdir(parents=True)
    blocker = user_paths.session_workspace(s.id)
    blocker.write_text("not a folder")
    events: list[Event] = []
    summarizer = FakeSummarizer()
    manager = make_manager(s, window=W, summarize=summarizer, events=events)
    before = manager.engine.assemble(SYSTEM)
    path_before = [e.id for e in s.current_path()]
    entry = await manager.compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is None
    assert manager.engine.assemble(SYSTEM) == before
    assert [e.id for e in s.current_path()] == path_before  # no compaction entry appended
    failed = [e for e in events if isinstance(e, CompactionFailed)]
    assert failed and "cannot create the workspace folder" in failed[0].reason
    status = manager.status()
    assert status.problem.startswith("compaction failed: cannot create the workspace folder")

    # An automatic attempt within the same turn is not retried before every call...
    s.append_message(Role.ASSISTANT, "", usage=Usage(input_tokens=int(0.9 * W)))
    s.append_message(Role.ASSISTANT, "thinking", usage=Usage(input_tokens=int(0.9 * W)))
    events.clear()
    await manager.prepare(SYSTEM, [])
    assert not [e for e in events if isinstance(e, CompactionStarted)]
    # ... but at the next turn, and it succeeds once the folder is writable.
    blocker.unlink()
    s.append_message(Role.USER, "next turn")
    s.append_message(Role.ASSISTANT, "ok", usage=Usage(input_tokens=int(0.9 * W)))
    await manager.prepare(SYSTEM, [])
    assert _finished(events) and manager.status().problem == ""


@pytest.mark.asyncio
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
async def test_a_read_only_workspace_folder_keeps_every_turn(
    disk_session: Session, make_manager: ManagerFactory, user_paths: UserPaths
) -> None:
    _long_session(disk_session)
    folder = user_paths.session_workspace(disk_session.id)
    folder.mkdir(parents=True)
    folder.chmod(0o500)
    try:
        manager = make_manager(disk_session, window=W)
        before = manager.engine.assemble(SYSTEM)
        assert await manager.compact(Tier.SUMMARIZE) is None
        assert manager.engine.assemble(SYSTEM) == before
        assert "cannot write" in manager.status().problem
    finally:
        folder.chmod(0o700)


def test_a_full_disk_leaves_no_half_written_workspace_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = DiskWorkspace(tmp_path / "ws")

    def no_space(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(WorkspaceError, match="No space left"):
        workspace.write("archive", "text")
    monkeypatch.undo()
    assert list((tmp_path / "ws").iterdir()) == []
    assert workspace.write("archive", "a").endswith("001-archive.md")
    assert workspace.write("summary", "b").endswith("002-summary.md")


@pytest.mark.asyncio
async def test_a_log_that_cannot_be_appended_keeps_the_context_and_removes_the_file(
    disk_session: Session,
    make_manager: ManagerFactory,
    user_paths: UserPaths,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = disk_session
    _long_session(s)
    manager = make_manager(s, window=W)
    before = manager.engine.assemble(SYSTEM)
    original = s.append

    def failing_append(entry: AnyEntry) -> AnyEntry:
        if isinstance(entry, CompactionEntry):
            raise SessionError("disk full while appending")
        return original(entry)

    monkeypatch.setattr(s, "append", failing_append)
    assert await manager.compact(Tier.SUMMARIZE) is None
    assert manager.engine.assemble(SYSTEM) == before
    assert "disk full while appending" in manager.status().problem
    folder = user_paths.session_workspace(s.id)
    assert not folder.exists() or list(folder.iterdir()) == []


@pytest.mark.asyncio
async def test_ten_compactions_in_a_row_keep_the_first_tasks_files_and_the_newest_request(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    summarizer = FakeSummarizer()
    manager = make_manager(s, window=W, summarize=summarizer)
    add_turn(
        s,
        "first task: fix parser",
        [
            Step("read", {"path": "src/first_read.py"}, "x"),
            Step("edit", {"path": "src/first_edit.py", "old": "a", "new": "b"}, "ok"),
        ],
    )
    newest = ""
    for round_ in range(10):
        for i in range(6):
            newest = f"round {round_} step {i}: keep `exact` text\n  indented"
            output = unique_output(600, f"out {round_} {i}")
            add_turn(s, newest, [Step("bash", {"command": f"make {i}"}, output)])
        # Alternate tiers: code-filled sections must survive archives and truncations too.
        tier = (Tier.SUMMARIZE, Tier.MOVE_TO_WORKSPACE, Tier.TRUNCATE)[round_ % 3]
        assert await manager.compact(tier) is not None
    final = next(e for e in reversed(s.current_path()) if isinstance(e, CompactionEntry))
    assert "src/first_edit.py" in final.files_modified
    assert "src/first_read.py" in final.files_read
    assert "`src/first_edit.py`" in final.summary and "`src/first_read.py`" in final.summary
    assert f"## Active Task\n{newest}" in final.summary
    assert manager.status().compactions == 10
    # Each Summarize after the first updated the previous summary instead of starting over.
    assert all("<previous-summary>" in str(m[-1]["content"]) for m, _ in summarizer.calls[1:])
    assert final.summary.count("## Goal") == 1


@pytest.mark.asyncio
async def test_two_weak_compactions_pause_automatic_compaction_until_a_manual_one(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    for i in range(5):
        add_turn(s, f"small {i}", [Step("bash", {"command": "ls"}, unique_output(300, f"a{i}"))])
    # A pasted log fills the window: only the small turns around it can leave.
    add_turn(s, "why does this fail?\n" + unique_output(int(0.84 * W), "log"), [], "Looking.")
    events: list[Event] = []
    manager = make_manager(
        s, window=W, events=events, kept_turns_max_tokens=10**6, compact_target=1.0
    )
    # The provider says the request is too long, twice: each compaction frees under 10 %.
    assert await manager.on_overflow()
    finished = _finished(events)
    assert len(finished) == 1
    saved = finished[0].tokens_before - finished[0].tokens_after
    assert 0 < saved < 0.1 * finished[0].tokens_before
    assert manager.strikes == 1 and not manager.status().paused
    add_turn(s, "and now?", [Step("bash", {"command": "ls"}, unique_output(300, "b"))])
    assert await manager.on_overflow()
    status = manager.status()
    assert status.paused and manager.strikes == 2
    assert status.problem == ""  # the bar shows the paused flag; the notice says why
    assert any(isinstance(e, Notice) and "paused" in e.text for e in events)
    # Paused: no more automatic attempts on the following calls (the reply anchors the count,
    # so the pre-flight check finds that the request fits).
    s.append_message(Role.USER, "go on")
    s.append_message(Role.ASSISTANT, "Reading it.", usage=Usage(input_tokens=int(0.84 * W)))
    events.clear()
    await manager.prepare(SYSTEM, [])
    await manager.prepare(SYSTEM, [])
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    assert not [e for e in events if isinstance(e, CompactionStarted)]
    # A manual compaction resumes automatic compaction.
    await manager.compact(Tier.TRUNCATE)
    assert not manager.status().paused and manager.strikes == 0


@pytest.mark.asyncio
async def test_anti_thrashing_state_survives_a_resume(
    disk_session: Session, make_manager: ManagerFactory
) -> None:
    s = disk_session
    add_turn(s, "start", [])
    for _ in range(2):
        s.append(
            CompactionEntry(
                id=s.new_id(),
                parent_id=s.leaf_id,
                tier="move_to_workspace",
                summary="",
                first_kept_id=s.current_path()[0].id,
                tokens_before=90_000,
                tokens_after=88_000,
            )
        )
    s.append_message(Role.ASSISTANT, "x", usage=Usage(input_tokens=88_000))
    s.sync()
    assert make_manager(s, window=W).status().paused


@pytest.mark.parametrize(
    ("tool_chars", "fill", "route"),
    [
        (0, 0.5, Route.FITS),
        (60_000, 0.82, Route.TRUNCATE_TOOL_RESULTS_ONLY),
        (40_000, 0.9, Route.COMPACT_THEN_TRUNCATE),
        (1, 0.85, Route.COMPACT_ONLY),
    ],
)
@pytest.mark.asyncio
async def test_each_pre_flight_route_is_reached(
    memory_session: Session,
    make_manager: ManagerFactory,
    tool_chars: int,
    fill: float,
    route: Route,
) -> None:
    """With automatic compaction off, so only the pre-flight check acts (it still does)."""
    s = memory_session
    events: list[Event] = []
    # Budget = 100,000 - 5,000 reserve (the room above Truncate); every figure is an estimate
    # (x 1.2).
    manager = make_manager(s, window=W, events=events, auto_compact=False)
    assert manager.reserve == 5_000
    filler = int(fill * W) - tool_chars // 4
    for i in range(30):  # each filler output stays under the 16,000-character cap
        add_turn(
            s, f"turn {i}", [Step("bash", {"command": "ls"}, unique_output(filler // 30, f"f{i}"))]
        )
    if tool_chars:
        add_turn(s, "the big one", [Step("bash", {"command": "cat log"}, "L" * tool_chars)])
    messages = await manager.prepare(SYSTEM, [])
    assert manager.last_preflight is not None and manager.last_preflight.route is route
    compacted = [e for e in events if isinstance(e, CompactionStarted)]
    if route in (Route.COMPACT_ONLY, Route.COMPACT_THEN_TRUNCATE):
        assert compacted and compacted[0].reason.startswith("pre-flight")
    else:
        assert not compacted
    if route is Route.TRUNCATE_TOOL_RESULTS_ONLY:
        tool = next(
            m
            for m in messages
            if m["role"] == "tool" and "cut from the middle" in str(m["content"])
        )
        assert len(str(tool["content"])) <= 16_000
        assert str(tool["content"]).startswith("L") and str(tool["content"]).endswith("L")
        assert manager.last_truncated == 1
    assert pair_problems(messages) == []


@pytest.mark.asyncio
async def test_the_request_is_capped_at_100_messages_without_splitting_pairs(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    for i in range(40):
        add_turn(memory_session, f"t{i}", [[Step("ls", {}, "a"), Step("ls", {}, "b")]])
    manager = make_manager(memory_session, window=1_000_000)
    messages = await manager.prepare(SYSTEM, [])
    assert messages[0]["role"] == "system"
    assert len(messages) - 1 <= 100 and manager.last_dropped > 0
    assert pair_problems(messages) == []
    assert messages[-1]["content"] == "Done."


@pytest.mark.asyncio
async def test_a_provider_overflow_compacts_at_the_next_tier(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    _long_session(memory_session)
    events: list[Event] = []
    manager = make_manager(memory_session, window=W, events=events)
    assert manager.status().tier is Tier.NONE
    assert await manager.on_overflow() is True
    (done,) = _finished(events)
    assert done.tier is Tier.MOVE_TO_WORKSPACE and done.workspace_file


@pytest.mark.asyncio
async def test_overflow_with_nothing_to_free_says_so(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    memory_session.append_message(Role.USER, "hello")
    manager = make_manager(memory_session, window=W)
    assert await manager.on_overflow() is False


@pytest.mark.asyncio
async def test_overflow_with_an_oversized_result_truncates_it_in_the_next_request(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    add_turn(memory_session, "one", [Step("bash", {"command": "cat"}, "Q" * 50_000)])
    manager = make_manager(memory_session, window=W)
    assert await manager.on_overflow() is True
    messages = await manager.prepare(SYSTEM, [])
    assert all(len(str(m["content"])) <= 16_000 for m in messages if m["role"] == "tool")


@pytest.mark.asyncio
async def test_pi_engine_compacts_only_at_window_minus_reserve_and_keeps_recent_tokens(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    summarizer = FakeSummarizer()
    events: list[Event] = []
    manager = make_manager(s, window=W, summarize=summarizer, events=events, engine="pi")
    assert manager.engine.name == "pi"
    await _grow_until(manager, s, 78, "p")
    await _turn_reaching(manager, s, 0.82, "still under")
    assert not _finished(events)  # 82 % is under window - reserve (83.6 %)
    await _turn_reaching(manager, s, 0.88, "past the reserve")
    (done,) = _finished(events)
    assert done.tier is Tier.SUMMARIZE
    prompt = summarizer.last_prompt
    assert "## Progress" in prompt and "## Next Steps" in prompt and "## Blocked" not in prompt
    kept = manager.accounting.view().entries
    assert sum(manager.accounting.tokens_by_entry()) <= 20_000 + 15_000
    assert isinstance(kept[0], MessageEntry)


@pytest.mark.asyncio
async def test_memory_flush_hook_is_off_by_default_and_fires_before_a_summarize(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    for i in range(8):
        add_turn(s, f"x{i}", [Step("read", {"path": "a"}, unique_output(4_000, f"x{i}"))])
    add_turn(s, "y", [], usage=Usage(input_tokens=int(0.9 * W)))
    # (No pruning: pruning alone would be enough, and then nothing is summarized.)
    assert not make_manager(s, window=W, prune_old_output_min_chars=10**9).needs_memory_flush()
    manager = make_manager(
        s, window=W, pre_compaction_memory_save=True, prune_old_output_min_chars=10**9
    )
    assert manager.needs_memory_flush()
    manager.mark_memory_flushed()
    assert not manager.needs_memory_flush()
    # Nothing worth summarizing (one short turn): no save either.
    short = Session.create(None, Path(s.header.cwd))
    add_turn(short, "x", [], usage=Usage(input_tokens=int(0.9 * W)))
    assert not make_manager(short, window=W, pre_compaction_memory_save=True).needs_memory_flush()


@pytest.mark.asyncio
async def test_a_session_kept_off_disk_keeps_its_archive_in_memory(
    memory_session: Session, make_manager: ManagerFactory, agentsh_home: Path
) -> None:
    _long_session(memory_session)
    manager = make_manager(memory_session, window=W)
    assert isinstance(manager.workspace, MemoryWorkspace)
    entry = await manager.compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is not None and entry.workspace_file.startswith("memory:")
    assert "request 0" in manager.workspace.read(entry.workspace_file)
    assert not (agentsh_home / "data" / "workspace").exists()


@pytest.mark.asyncio
async def test_breakdown_counts_each_part_and_previews_each_tier(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    _long_session(memory_session)
    manager = make_manager(memory_session, window=W)
    tools = [{"type": "function", "function": {"name": "read", "parameters": {"x": "y" * 400}}}]
    memory = "## Memory\n" + "remember this " * 20
    b = manager.breakdown(SYSTEM + memory, tools, memory)
    assert b.memory > 0 and b.system > 0 and b.tools > 100
    assert b.tool_results > b.messages > 0
    assert (
        b.estimated_total == b.system + b.memory + b.tools + b.summary + b.messages + b.tool_results
    )
    assert [p.tier for p in b.previews] == [Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE]
    assert all(p.frees_tokens > 0 and p.kept_tokens <= 20_000 for p in b.previews)
    assert b.to_json()["previews"][0]["tier"] == "move_to_workspace"
    assert b.turns == 12 and b.compactions == 0
    # A preview writes nothing.
    assert manager.status().compactions == 0


@pytest.mark.asyncio
async def test_a_turn_too_big_for_the_cap_is_split_and_its_request_stays_verbatim(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    add_turn(s, "warm up", [])
    request = "giant task: read all twelve modules\nand report"
    add_turn(
        s,
        request,
        [Step("read", {"path": f"src/g{i}.py"}, unique_output(2_000, f"g{i}")) for i in range(12)],
    )
    manager = make_manager(s, window=W)
    entry = await manager.compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is not None
    first_kept = s.get(entry.first_kept_id)
    assert isinstance(first_kept, MessageEntry) and first_kept.role is Role.ASSISTANT
    assert entry.summary.startswith(f"## Active Task\n{request}\n")
    assert "the first steps of the current turn were archived too: [read] src/g0.py" in (
        entry.summary
    )
    assert "`src/g0.py`" in entry.summary  # files read in the archived steps
    messages = manager.engine.assemble(SYSTEM)
    assert pair_problems(messages) == []
    assert messages[2]["role"] == "assistant"
    assert manager.accounting.messages_tokens() <= 20_000 + 1_000
    archive = manager.workspace.read(entry.workspace_file)
    assert request in archive and unique_output(2_000, "g0") in archive


@pytest.mark.asyncio
async def test_pruning_of_kept_entries_is_carried_into_the_next_compaction(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    same = "the same failing output\n" * 20
    for i in range(8):
        output = same if i in (5, 7) else f"unique {i}"
        add_turn(s, f"turn {i}", [Step("bash", {"command": "pytest"}, output)])
    duplicate = next(
        e for e in s.current_path() if getattr(e, "content", None) == same
    )  # turn 5's copy
    manager = make_manager(s, window=W)
    first = await manager.compact(Tier.SUMMARIZE)
    assert first is not None and duplicate.id in first.replacements
    add_turn(s, "turn 8", [Step("bash", {"command": "ls"}, "x")])
    second = await manager.compact(Tier.SUMMARIZE)
    assert second is not None
    assert second.replacements.get(duplicate.id) == first.replacements[duplicate.id]
    messages = manager.engine.assemble(SYSTEM)
    assert sum(1 for m in messages if m.get("content") == same) == 1


@pytest.mark.asyncio
async def test_a_pause_holds_when_the_provider_counts_more_than_the_estimate(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The provider's figure is 30 % above our estimate (a tokenizer we cannot load): the
    figure right after a compaction must stay on the provider's scale, or the weak compaction
    looks like a shrink and lifts the pause it just caused."""
    s = memory_session
    for i in range(14):
        add_turn(s, f"small {i}", [Step("bash", {"command": "ls"}, f"out {i}")])
    s.append_message(Role.USER, "why does this fail?\n" + unique_output(int(0.6 * W), "log"))
    s.append_message(Role.ASSISTANT, "Looking.", usage=Usage(input_tokens=int(0.82 * W)))
    events: list[Event] = []
    manager = make_manager(
        s,
        window=W,
        events=events,
        kept_turns_max_tokens=10**6,
        compact_target=1.0,
        prune_old_output_min_chars=10**9,
    )
    await manager.on_overflow()
    (first,) = _finished(events)
    assert first.tokens_after > 0.8 * W  # weak: only small turns could leave
    # The figure after the compaction is the provider's, less what left (still a guess).
    status = manager.status()
    assert status.estimated and status.used == first.tokens_after
    await manager.on_overflow()
    assert manager.status().paused and manager.strikes == 2
    for n in range(3):
        add_turn(s, f"more {n}", [], usage=Usage(input_tokens=int(0.82 * W)))
        await manager.prepare(SYSTEM, [])
    assert manager.status().paused
    assert len(_finished(events)) == 2  # the later calls found compaction paused
    assert any(isinstance(e, Notice) and "paused" in e.text for e in events)


@pytest.mark.asyncio
async def test_a_compaction_with_too_few_turns_says_how_many_the_tier_keeps(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    for i in range(3):
        add_turn(memory_session, f"short {i}", [Step("bash", {"command": "ls"}, f"x{i}")])
    events: list[Event] = []
    manager = make_manager(memory_session, window=W, events=events)
    assert await manager.compact(Tier.SUMMARIZE) is None
    (failed,) = [e for e in events if isinstance(e, CompactionFailed)]
    assert (
        failed.reason == "nothing to free: the context holds 3 turns and Summarize keeps the last 5"
    )
    previews = {p.tier: p for p in manager.breakdown(SYSTEM, []).previews}
    assert previews[Tier.SUMMARIZE].note == failed.reason  # nothing to prune either
    assert previews[Tier.SUMMARIZE].frees_tokens == 0


@pytest.mark.asyncio
async def test_tokens_after_stay_on_the_providers_scale_when_it_counts_less(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The provider's figure is a tenth of our estimate of the messages: subtracting what left
    (on our scale) from its figure went below zero, and the compaction read "18k -> 0 tokens"."""
    s = memory_session
    for i in range(12):
        add_turn(s, f"turn {i}", [Step("bash", {"command": "make"}, unique_output(3_000, f"o{i}"))])
    manager = make_manager(s, window=W)
    estimate = manager.deps.accounting.messages_tokens()
    s.append_message(Role.USER, "and now?")
    s.append_message(Role.ASSISTANT, "Done.", usage=Usage(input_tokens=estimate // 10))
    entry = await manager.compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is not None
    assert 0 < entry.tokens_after < entry.tokens_before
    assert entry.tokens_after > 0.5 * entry.tokens_before  # ten of thirteen turns stay


@pytest.mark.asyncio
async def test_an_output_truncated_to_fit_stays_truncated_after_the_reply_that_measured_it(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The pre-flight check cut an oversized output to fit one request; the provider's count
    of that (cut) request then anchored the context's size, so at the next request the context
    "fit" and the output went whole: 34.6k tokens on a 32k window, which a provider refuses
    (seen in an ``agentsh -p -c`` drive with provider-scale counts)."""
    s = memory_session
    window = 20_000
    manager = make_manager(s, window=window, auto_compact=False)
    s.append_message(Role.USER, "one")
    call = ToolCall(id="c1", name="bash", arguments='{"command": "cat big.log"}')
    s.append_message(Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS)
    s.append_tool_result("c1", "bash", unique_output(80_000, "big"))

    first = await manager.prepare(SYSTEM, [])
    assert manager.last_truncated == 1
    sent = sum(manager.accounting.count(str(m["content"])) + 4 for m in first)
    s.append_message(Role.ASSISTANT, "Read it.", usage=Usage(input_tokens=sent, output_tokens=5))
    s.append_message(Role.USER, "two")

    second = await manager.prepare(SYSTEM, [])
    (tool,) = [m for m in second if m["role"] == "tool"]
    assert "cut from the middle" in str(tool["content"]) and manager.last_truncated == 1
    size = sum(manager.accounting.count(str(m["content"])) + 4 for m in second)
    assert size <= window - manager.reserve
