"""The facts code keeps at every compaction: the newest request, the files, the last error and a
bounded list of archived turns."""

from __future__ import annotations

import json
import re

import pytest

from agentsh.context.accounting import Accounting
from agentsh.context.convert import to_messages
from agentsh.context.facts import bounded_request, dropped_facts
from agentsh.context.prompt_budget import files_chars, request_chars
from agentsh.context.summary import SummaryDoc, files_text
from agentsh.events import Tier
from agentsh.llm.tokens import estimate_tokens
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session
from tests.context.builders import SYSTEM, Step, add_turn, call_id, unique_output
from tests.context.conftest import ManagerFactory

W = 100_000


def _newest_compaction(s: Session) -> CompactionEntry:
    return next(e for e in reversed(s.current_path()) if isinstance(e, CompactionEntry))


@pytest.mark.asyncio
async def test_the_active_task_is_the_newest_request_after_every_kind_of_compaction(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A pruning-only compaction used to copy the previous summary, whose Active Task named the
    request of an earlier compaction while the newest sat below it."""
    s = memory_session
    for i in range(8):
        add_turn(
            s, f"old request {i}", [Step("bash", {"command": "ls"}, unique_output(900, f"{i}"))]
        )
    manager = make_manager(s, window=W)
    assert await manager.compact(Tier.SUMMARIZE) is not None
    same = unique_output(12_000, "same")  # the same long output, six times: pruning is enough
    for i in range(6):
        usage = Usage(input_tokens=82_000) if i == 5 else None
        add_turn(s, f"newer request {i}", [Step("bash", {"command": "make"}, same)], usage=usage)
    await manager.prepare(SYSTEM, [])
    entry = _newest_compaction(s)
    assert entry.workspace_file.endswith("002-summary.md")  # nothing was cut: pruning only
    assert entry.replacements
    doc = SummaryDoc.parse(entry.summary)
    assert doc.sections["Active Task"] == "newer request 5"


@pytest.mark.asyncio
async def test_one_archived_turn_is_one_turn_and_archives_are_a_bounded_merged_list(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """ "1 earlier turn were moved", and a pointer of ~250 characters of absolute path per
    compaction, without bound."""
    s = memory_session
    manager = make_manager(s, window=W, move_to_workspace_keep_turns=1, summarize_keep_turns=1)
    add_turn(s, "first", [Step("read", {"path": "a.py"}, unique_output(500, "a"))])
    add_turn(s, "second", [])
    first = await manager.compact(Tier.MOVE_TO_WORKSPACE)
    assert first is not None
    assert "were moved" not in first.summary
    assert "- turn 1: verbatim in `001-archive.md`" in first.summary
    sizes: list[int] = []
    for n in range(20):
        add_turn(s, f"more {n}", [Step("read", {"path": f"m{n}.py"}, unique_output(500, f"m{n}"))])
        tier = Tier.SUMMARIZE if n % 5 == 4 else Tier.MOVE_TO_WORKSPACE
        entry = await manager.compact(tier)
        assert entry is not None
        archived = entry.summary.split("## Archived Turns\n", 1)[1]
        sizes.append(len(archived))
        lines = archived.strip().splitlines()
        assert len(lines) <= 7  # the folder, then at most six ranges
        assert archived.count("/") <= lines[0].count("/")  # the folder is named once
    assert max(sizes) < 7 * 100  # bounded, not one growing line per compaction
    assert entry is not None and "- turns 1-" in entry.summary and "(" in entry.summary


@pytest.mark.asyncio
async def test_the_last_error_survives_compactions_until_a_newer_one(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    manager = make_manager(s, window=W, move_to_workspace_keep_turns=1, summarize_keep_turns=1)
    trace = "Traceback (most recent call last):\n" + "  frame\n" * 60 + "ValueError: bad widget 7"
    add_turn(
        s,
        "run the tests",
        [Step("bash", {"command": "pytest -q"}, trace, is_error=True, details={"exit_code": 1})],
    )
    add_turn(s, "look elsewhere", [Step("read", {"path": "b.py"}, unique_output(400, "b"))])
    for tier in (Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE):
        add_turn(s, f"go on {tier}", [Step("read", {"path": "c.py"}, unique_output(400, "c"))])
        entry = await manager.compact(tier)
        assert entry is not None
        error = SummaryDoc.parse(entry.summary).sections["Last Error"]
        assert error.startswith("`pytest -q` (bash) -> exit 1")
        assert "ValueError: bad widget 7" in error and error.count("  frame") <= 30
    add_turn(
        s,
        "once more",
        [
            Step(
                "bash",
                {"command": "make"},
                "make: *** [all] Error 2",
                is_error=True,
                details={"exit_code": 2},
            ),
            Step("bash", {"command": "make"}, "ok", details={"exit_code": 0}),
        ],
    )
    add_turn(s, "and then", [])
    entry = await manager.compact(Tier.TRUNCATE)
    assert entry is not None
    error = SummaryDoc.parse(entry.summary).sections["Last Error"]
    assert "make: *** [all] Error 2" in error and "A later run of the same call succeeded" in error


@pytest.mark.asyncio
async def test_the_message_cap_names_the_files_and_error_of_what_it_leaves_out(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """On an 8k window with short turns the 100-message cap dropped 49 messages before any
    compaction ran: files written (by tools and by bash) in them were named nowhere, and so
    was the newest error when no later command failed."""
    s = memory_session
    for n in range(1, 13):
        add_turn(
            s,
            f"task {n}",
            [
                Step("write", {"path": f"src/w{n}.py", "content": "x"}, "Created"),
                Step(
                    "bash",
                    {"command": "sh gen.sh"},
                    f"[Files changed by this command: gen/out_{n}.py]",
                    details={"exit_code": 0, "files_changed": [f"gen/out_{n}.py"]},
                ),
                Step("read", {"path": f"docs/r{n}.txt"}, "text"),
                Step(
                    "bash",
                    {"command": "make"},
                    f"ERROR E{n}: broke",
                    details={"exit_code": 1} if n == 2 else {"exit_code": 0},
                ),
            ],
        )
    manager = make_manager(s, window=1_000_000, max_messages=40)
    messages = await manager.prepare(SYSTEM, [])
    assert manager.last_dropped > 0
    body = str(messages)
    for n in range(1, 13):
        assert f"src/w{n}.py" in body and f"gen/out_{n}.py" in body, n
        assert f"docs/r{n}.txt" in body, n
    assert "ERROR E2: broke" in body  # the only failure, left out with its turn
    note = messages[1]["content"]
    assert note.startswith("[Note: ") and "`src/w1.py`" in note and "`make` (bash)" in note
    # The next request leaves out the same messages: its start is the same.
    add_turn(s, "task 13", [])
    again = await manager.prepare(SYSTEM, [])
    assert again[:2] == messages[:2]


def _many_files(s: Session) -> tuple[list[str], list[str]]:
    """30 turns touching 120 modified files (by write, edit and bash) and 60 read ones; the
    last turn edits the oldest file again. Returns (modified, read), each oldest first."""
    modified: list[str] = []
    read: list[str] = []
    for n in range(30):
        w, e, g1, g2 = (f"src/pkg/mod_{4 * n + k:03d}.py" for k in range(4))
        r1, r2 = f"docs/ref_{2 * n:03d}.md", f"docs/ref_{2 * n + 1:03d}.md"
        add_turn(
            s,
            f"step {n}",
            [
                Step("read", {"path": r1}, f"text {n}"),
                Step("write", {"path": w, "content": "x"}, "Created"),
                Step("edit", {"path": e, "old": "a", "new": "b"}, "ok"),
                Step("read", {"path": r2}, f"more {n}"),
                Step(
                    "bash",
                    {"command": "sh gen.sh"},
                    "generated",
                    details={"exit_code": 0, "files_changed": [g1, g2]},
                ),
            ],
        )
        modified += [w, e, g1, g2]
        read += [r1, r2]
    add_turn(
        s, "fix the first one", [Step("edit", {"path": modified[0], "old": "b", "new": "c"}, "ok")]
    )
    modified = [*modified[1:], modified[0]]
    return modified, read


def _listed(section: str, label: str) -> list[str]:
    line = next(x for x in section.splitlines() if x.startswith(f"- {label}"))
    return re.findall(r"`([^`]+)`", line)


def _more(section: str, label: str) -> int:
    """The paths of a list counted, not named: its "… and N more" line, or all of them."""
    lines = section.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith(f"- {label}"))
    unlisted = re.fullmatch(
        rf"- {label}: (\d+) files, not listed \(no room on this window\)", lines[at]
    )
    if unlisted is not None:
        return int(unlisted.group(1))
    found = re.fullmatch(r"  … and (\d+) more, touched earlier", lines[at + 1])
    assert found is not None, lines[at + 1]
    return int(found.group(1))


@pytest.mark.asyncio
async def test_on_a_4k_window_the_file_lists_are_newest_first_within_their_share(
    disk_session: Session, make_manager: ManagerFactory
) -> None:
    """Each list showed up to 100 paths, oldest first: ~19 % of a 4k window each, and the
    files touched last (the relevant ones) were the ones cut."""
    s = disk_session
    modified, read = _many_files(s)
    entry = await make_manager(s, window=4_000).compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is not None
    section = SummaryDoc.parse(entry.summary).sections["Relevant Files"]
    budget = files_chars(4_000)
    assert budget is not None and len(section) <= budget
    shown = _listed(section, "Modified")
    assert shown[0] == "src/pkg/mod_000.py"  # edited last, though it was the first touched
    assert shown == modified[::-1][: len(shown)]
    assert len(shown) + _more(section, "Modified") == len(modified)
    shown_read = _listed(section, "Read")
    assert shown_read == read[::-1][: len(shown_read)]
    assert len(shown_read) + _more(section, "Read") == len(read)
    # The log keeps the whole lists (oldest first, by last touch), the summary only a share.
    assert s.path is not None
    logged = _newest_compaction(Session.open(s.path, lock=False))
    assert logged.files_modified == tuple(modified) and logged.files_read == tuple(read)


@pytest.mark.asyncio
async def test_a_large_window_still_lists_100_paths_a_list(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    modified, read = _many_files(s)
    for n in range(60):  # 120 read files in all, over the 100 a list names
        read.append(f"docs/extra_{n:03d}.md")
    add_turn(s, "read more", [Step("read", {"path": p}, "t") for p in read[60:]])
    entry = await make_manager(s, window=200_000).compact(Tier.MOVE_TO_WORKSPACE)
    assert entry is not None
    section = SummaryDoc.parse(entry.summary).sections["Relevant Files"]
    assert _listed(section, "Modified") == modified[::-1][:100]
    assert _more(section, "Modified") == 20
    assert _listed(section, "Read") == read[::-1][:100]
    assert _more(section, "Read") == 20


def test_the_file_lists_share_the_room_modified_first() -> None:
    modified = [f"m{n}.py" for n in range(50)]
    read = [f"r{n}.py" for n in range(50)]
    text = files_text(read, modified, 200)
    assert len(text) <= 200
    assert text.startswith("- Modified (newest first): `m49.py`, `m48.py`")
    assert "- Read: 50 files, not listed (no room on this window)" in text
    assert files_text([], ["a" * 300 + ".py"], 100).startswith("- Modified: `aaa")  # always named
    assert files_text(read, modified) == files_text(read, modified, 10**9)


def test_the_message_cap_note_lists_files_newest_first_within_the_same_share(
    memory_session: Session,
) -> None:
    """The note naming what the message cap left out listed every path, oldest first."""
    modified, _read = _many_files(memory_session)
    view = Accounting(memory_session, estimate_tokens).view()
    note = dropped_facts(view.entries, to_messages(view, SYSTEM)[1:], "", 4_000)
    files = note.removeprefix("Files they touched:\n")
    budget = files_chars(4_000)
    assert budget is not None and len(files) <= budget
    assert _listed(files, "Modified")[0] == modified[-1] == "src/pkg/mod_000.py"
    assert len(_listed(files, "Modified")) + _more(files, "Modified") == len(modified)


def _long_request(n: int) -> str:
    return f"REQUEST-HEAD-{n} " + " ".join(f"word{k}" for k in range(260)) + f" REQUEST-TAIL-{n}"


@pytest.mark.asyncio
async def test_a_long_request_is_not_copied_twice_on_a_small_window(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A 2,000-character request stayed in the conversation and was copied verbatim into the
    Active Task section as well: ~500 tokens twice, 12 % of a 4k window for the copy."""
    s = memory_session
    for i in range(4):
        add_turn(s, f"old {i}", [Step("bash", {"command": "ls"}, unique_output(300, f"{i}"))])
    request = _long_request(1)
    assert 1_900 < len(request) <= 2_000
    add_turn(s, request, [Step("bash", {"command": "make"}, "ok")])
    manager = make_manager(s, window=4_000)
    assert await manager.compact(Tier.TRUNCATE) is not None
    task = SummaryDoc.parse(_newest_compaction(s).summary).sections["Active Task"]
    assert len(task) < 250 and "REQUEST-HEAD-1" in task, task
    sent = json.dumps(to_messages(manager.accounting.view(), SYSTEM))
    assert sent.count("REQUEST-TAIL-1") == 1  # the message itself, verbatim
    # On a large window a request this long is still copied.
    big = make_manager(s, window=200_000)
    for i in range(3):
        add_turn(s, f"more {i}", [Step("bash", {"command": "ls"}, unique_output(300, f"m{i}"))])
    add_turn(s, _long_request(3), [Step("bash", {"command": "make"}, "ok")])
    assert await big.compact(Tier.TRUNCATE) is not None
    assert _long_request(3) in _newest_compaction(s).summary


@pytest.mark.asyncio
async def test_a_long_request_that_left_the_context_keeps_head_tail_and_its_entry(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The request's own message left with the early steps of its turn: its copy is bounded
    by a share of the window (800 characters on 4k) and says where the whole text is."""
    s = memory_session
    request = _long_request(2)
    steps = [Step("bash", {"command": f"step {k}"}, unique_output(250, f"s{k}")) for k in range(8)]
    add_turn(s, request, steps)
    request_id = next(e.id for e in s.current_path() if getattr(e, "content", "") == request)
    manager = make_manager(s, window=4_000)
    assert await manager.compact(Tier.TRUNCATE) is not None
    sent = json.dumps(to_messages(manager.accounting.view(), SYSTEM))
    assert "REQUEST-HEAD-2" in sent and "REQUEST-TAIL-2" in sent
    assert json.dumps(request)[1:-1] not in sent  # its own message left the context
    task = SummaryDoc.parse(_newest_compaction(s).summary).sections["Active Task"]
    assert len(task) <= 800 + 150, len(task)
    assert task.startswith("REQUEST-HEAD-2") and task.endswith("REQUEST-TAIL-2")
    assert request_id in task


@pytest.mark.asyncio
async def test_a_long_request_that_left_the_context_names_the_archive_the_model_can_read(
    disk_session: Session, make_manager: ManagerFactory
) -> None:
    """Its copy said the whole request was "in the session log", which no tool of the model
    reads: on an 8k window a 6,000-character request lost its middle for the rest of the
    turn. The archive that holds it verbatim is named; the read tool opens it without asking."""
    s = disk_session
    request = _long_request(4)
    steps = [Step("bash", {"command": f"step {k}"}, unique_output(250, f"s{k}")) for k in range(8)]
    add_turn(s, request, steps)
    manager = make_manager(s, window=4_000)
    entry = await manager.compact(Tier.TRUNCATE)
    assert entry is not None and entry.workspace_file
    task = SummaryDoc.parse(entry.summary).sections["Active Task"]
    assert f"the whole request is in `{entry.workspace_file}`" in task
    assert request in manager.workspace.read(entry.workspace_file)


@pytest.mark.asyncio
@pytest.mark.parametrize(("window", "chars"), [(8_192, 6_000), (128_000, 40_000)])
async def test_a_long_requests_copy_keeps_naming_its_archive_through_later_compactions(
    disk_session: Session, make_manager: ManagerFactory, window: int, chars: int
) -> None:
    """The copy is 5 % of the window (1,638 characters on 8k, 25,600 on 128k) and names the
    archive that holds the request whole. A second compaction in the same turn read the copy
    back from the summary and cut it as a new text: the note went, and the copy said the whole
    request was "the session log", out of the model's reach, for the rest of the turn."""
    s = disk_session
    request = "REQUEST-HEAD " + "".join(f"word{k} " for k in range(chars // 6)) + "REQUEST-TAIL"
    steps = [
        Step("bash", {"command": f"step {k}"}, unique_output(window // 4, f"s{k}"))
        for k in range(10)
    ]
    add_turn(s, request, steps)
    manager = make_manager(s, window=window)
    limit = request_chars(window)
    assert limit == int(window * 4 * 0.05)
    first = await manager.compact(Tier.TRUNCATE)
    assert first is not None
    archive = first.workspace_file
    assert request in manager.workspace.read(archive)
    notes: list[str] = []
    for k in range(2):
        task = SummaryDoc.parse(_newest_compaction(s).summary).sections["Active Task"]
        assert task.startswith("REQUEST-HEAD") and task.endswith("REQUEST-TAIL")
        (note,) = re.findall(r"\n\[\.\.\. .*? \.\.\.\]\n", task)
        assert limit - 2 <= len(task) - len(note) <= limit
        assert f"the whole request is in `{archive}`" in note
        notes.append(note)
        for j in range(6):  # the turn goes on, and compacts again
            call = ToolCall(f"more{k}{j}", "bash", '{"command": "more"}')
            s.append_message(
                Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
            )
            s.append_tool_result(call.id, "bash", unique_output(window // 4, f"m{k}{j}"))
        assert await manager.compact(Tier.TRUNCATE) is not None
    assert notes[0] == notes[1]


def test_a_copy_read_back_on_a_smaller_window_is_cut_around_its_note() -> None:
    copy = bounded_request("H" * 3_000 + "T" * 3_000, 1_500, "abc", "/ws/001-archive.md")
    again = bounded_request(copy, 600)
    assert again.startswith("H" * 400) and again.endswith("T" * 200)
    assert "5,400 characters of this request left out here" in again
    assert "the whole request is in `/ws/001-archive.md`" in again
    assert bounded_request(copy, 1_500) == copy


@pytest.mark.asyncio
async def test_a_request_and_an_error_holding_summary_headings_survive_later_compactions(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A later compaction reads the request and the error back from the previous summary; a
    pasted spec with "## Goal" or "**Next Steps**" lines, or an error output with one, was cut
    there (the rest read as a section of the model's), and the facts were lost."""
    s = memory_session
    request = (
        "Please implement this spec.\n## Goal\nShip the parser by Friday.\n"
        "**Next Steps**\n1. write tests\n```\n## Critical Context\n```\nREQUEST-END keep it"
    )
    failing = Step(
        "bash",
        {"command": "make docs"},
        "building...\n## Blocked\n### Last Error\n```` odd fence\nERROR-TAIL: docs failed",
        is_error=True,
        details={"exit_code": 2},
    )
    steps = [Step("bash", {"command": f"step {k}"}, unique_output(300, f"s{k}")) for k in range(10)]
    add_turn(s, request, [failing, *steps])
    seen: list[object] = []
    manager = make_manager(s, window=4_000, emit=seen.append)
    for round_ in range(3):  # the request's own message left at the first one
        assert await manager.compact(Tier.TRUNCATE) is not None, seen
        doc = SummaryDoc.parse(_newest_compaction(s).summary)
        assert request in doc.sections["Active Task"], round_
        error = doc.sections["Last Error"]
        assert error.startswith("`make docs` (bash) -> exit 2"), round_
        assert "## Blocked" in error and error.rstrip("`\n").endswith("ERROR-TAIL: docs failed")
        assert "Goal" not in doc.sections and "Blocked" not in doc.sections
        sent = json.dumps(to_messages(manager.accounting.view(), SYSTEM))
        assert json.dumps(request)[1:-1] in sent and "ERROR-TAIL: docs failed" in sent
        # the same turn goes on (no new request), with more output to compact
        more = [Step("bash", {"command": f"more {round_}"}, unique_output(250, f"m{round_}"))]
        for step in more * 4:
            call = ToolCall(id=call_id(), name=step.tool, arguments=json.dumps(step.args))
            s.append_message(
                Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
            )
            s.append_tool_result(call.id, step.tool, unique_output(250, call.id))
