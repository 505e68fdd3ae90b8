"""The structured summary: format, the sections code owns, the request sent to the model."""

from __future__ import annotations

import json

import pytest

from agentsh.context.accounting import Accounting
from agentsh.context.facts import Facts, files_touched, merge_files
from agentsh.context.summary import (
    PI,
    TIERED,
    SummaryDoc,
    accept_summary,
    active_task_text,
    fit_transcript,
    fitted_summary_request,
    serialize,
    summary_request,
)
from agentsh.events import Tier
from agentsh.llm.tokens import estimate_tokens
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn, unique_output
from tests.context.conftest import GOOD_SUMMARY, FakeSummarizer, ManagerFactory


def test_the_tiered_template_has_the_13_sections_of_the_spec_in_order_and_the_last_error() -> None:
    assert TIERED.headings == (
        "Active Task",
        "Goal",
        "Constraints & Preferences",
        "Completed Actions",
        "Active State",
        "In Progress",
        "Blocked",
        "Key Decisions",
        "Resolved Questions",
        "Pending User Asks",
        "Relevant Files",
        "Last Error",
        "Remaining Work",
        "Critical Context",
    )
    assert PI.headings[1:7] == (
        "Goal",
        "Constraints & Preferences",
        "Progress",
        "Key Decisions",
        "Next Steps",
        "Critical Context",
    )


def test_parse_render_round_trip_keeps_sections_and_pointers() -> None:
    doc = SummaryDoc.parse(GOOD_SUMMARY.format(n=1))
    facts = Facts("Fix `x`\nexactly", ("a.py",), ("b.py",), "`make` -> exit 2", "")
    facts.apply(doc, TIERED)
    doc.pointers.append("- 3 earlier turns were moved verbatim to `001-archive.md`")
    text = doc.render()
    again = SummaryDoc.parse(text)
    assert again.sections == doc.sections and again.pointers == doc.pointers
    assert text.startswith("## Active Task\nFix `x`\nexactly")
    assert "- Modified: `b.py`\n- Read: `a.py`" in text
    assert "## Last Error\n`make` -> exit 2\n" in text


def test_a_pointer_only_summary_is_one_line_per_archive() -> None:
    doc = SummaryDoc.parse("- 2 earlier turns were moved verbatim to `001-archive.md`; read it")
    assert not doc.structured
    doc.pointers.append("- 1 earlier turn was moved verbatim to `002-archive.md`; read it")
    assert doc.render().count("\n") == 1


def test_garbage_or_empty_model_output_is_rejected() -> None:
    assert accept_summary("", TIERED) is None
    assert accept_summary("Sure, continuing with the fix now. " * 3, TIERED) is None
    assert accept_summary("## Goal\nx\n## Bogus\ny", TIERED) is None
    doc = accept_summary(
        "**Goal**\nx\n### Completed Actions\ny\n## Blocked (exact error text)\nz", TIERED
    )
    assert doc is not None and doc.sections["Blocked"] == "z"


def test_model_sections_never_override_what_code_owns() -> None:
    text = GOOD_SUMMARY.format(n=1) + "\n## Active Task\nsomething invented\n"
    doc = accept_summary(text, TIERED)
    assert doc is not None and "Active Task" not in doc.sections


def test_files_read_and_modified_come_from_successful_tool_calls(memory_session: Session) -> None:
    add_turn(
        memory_session,
        "work",
        [
            Step("read", {"path": "a.py"}, "..."),
            Step("read", {"path": "b.py"}, "..."),
            Step("edit", {"path": "b.py", "old": "x", "new": "y"}, "ok"),
            Step("write", {"path": "c.py", "content": "z"}, "denied", is_error=True),
            Step("bash", {"command": "cat d.py"}, "..."),
        ],
    )
    read, modified = files_touched(Accounting(memory_session, estimate_tokens).view().entries)
    assert read == ["a.py", "b.py"] and modified == ["b.py"]
    assert merge_files(["a.py", "b.py"], [], read, modified) == (("a.py",), ("b.py",))
    assert merge_files(["old.py"], ["e.py"], ["e.py"], []) == (("old.py",), ("e.py",))


def test_transcript_is_labelled_plain_text_with_results_cut_at_2000_chars(
    memory_session: Session,
) -> None:
    add_turn(
        memory_session,
        "please run",
        [Step("bash", {"command": "make"}, "o" * 5000, is_error=True)],
        "It failed.",
    )
    text = serialize(Accounting(memory_session, estimate_tokens).view().entries)
    assert "[User]: please run" in text
    assert '[Assistant tool calls]: bash({"command": "make"})' in text
    assert "[Tool result] (bash, error): " + "o" * 2000 + "...[3,000 more chars]" in text
    assert "[Assistant]: It failed." in text
    cut = fit_transcript("a" * 100 + "b" * 900, 500)
    assert len(cut) < 600 and cut.endswith("b" * 400) and "omitted" in cut


def test_a_dense_transcript_shorter_than_the_guess_is_cut_until_the_request_fits() -> None:
    """A transcript under the 3-characters-a-token guess but denser than that (one token a
    character here) went whole at every attempt: shrinking the guess never reached its length,
    and the summary fell back to an archive."""

    def count(text: str) -> int:
        return len(text)  # denser than any guess

    window, max_tokens = 8192, 819
    fixed = sum(count(str(m["content"])) for m in summary_request("", TIERED, max_tokens=819))
    room = window - max_tokens - fixed
    transcript = "x" * (room + 300)  # well under room * 3 characters, over the room in tokens
    messages = fitted_summary_request(
        transcript, TIERED, window=window, count=count, max_tokens=max_tokens
    )
    assert messages is not None
    assert sum(count(str(m["content"])) for m in messages) + max_tokens <= window
    assert "omitted" in messages[1]["content"]


def test_request_carries_previous_summary_newest_request_and_the_sections() -> None:
    previous = GOOD_SUMMARY.format(n=1) + "\n## Active Task\nold task\n"
    messages = summary_request(
        "[User]: hi",
        TIERED,
        previous=previous,
        newest_request="do the thing",
        split_turn=True,
    )
    assert messages[0]["role"] == "system" and "not a participant" in messages[0]["content"]
    body = messages[1]["content"]
    assert "<conversation>\n[User]: hi\n</conversation>" in body
    assert "<previous-summary>" in body and "marker-1" in body and "old task" not in body
    assert "Update it" in body and "cut in the middle" in body
    assert "<newest-request>\ndo the thing\n</newest-request>" in body
    for heading in ("## Goal", "## Blocked", "## Critical Context"):
        assert heading in body
    assert "## Active Task" not in body.split("</previous-summary>")[1]


def test_active_task_is_verbatim_unless_it_is_a_huge_paste() -> None:
    request = "Fix it.\n```\n  exact   spacing\n```"
    assert active_task_text(request) == request
    huge = "h" * 5000 + "MIDDLE" + "t" * 5000
    cut = active_task_text(huge)
    assert cut.startswith("h" * 4000) and cut.endswith("t" * 4000) and "MIDDLE" not in cut
    assert json.dumps(cut)


@pytest.mark.asyncio
@pytest.mark.parametrize("window", [4_000, 8_000])
async def test_the_summary_request_fits_the_window_on_a_small_one(
    memory_session: Session, make_manager: ManagerFactory, window: int
) -> None:
    """The transcript was given at least 4,000 tokens whatever the window, beside the prompt,
    the previous summary and the user's instructions: on a 4k window the summary request and
    its reply did not fit, so a real provider refused it and the Summarize fell back to
    archiving."""
    s = memory_session
    summarizer = FakeSummarizer()
    manager = make_manager(s, window=window, summarize=summarizer, summarize_keep_turns=1)
    for round_ in range(2):  # the second one also carries the previous summary
        per_turn = window // 12  # tokens, at ~4 characters a token: 92 % in all
        for n in range(11):
            add_turn(
                s,
                f"request {round_}.{n}",
                [Step("bash", {"command": "cat log"}, unique_output(per_turn * 4, f"{round_}{n}"))],
            )
        steer = " ".join(f"keep decision {k} and its reasons;" for k in range(40))
        assert await manager.compact(Tier.SUMMARIZE, instructions=steer) is not None
        messages, max_tokens = summarizer.calls[-1]
        sent = sum(manager.accounting.count(str(m["content"])) for m in messages)
        assert sent + max_tokens <= window, (round_, sent, max_tokens)


def test_a_summary_wrapped_in_a_code_fence_leaves_no_fence_open() -> None:
    """Models often wrap the whole reply in ```markdown ... ```: the closing fence (and a
    "Let me know" after it) stayed at the end of Critical Context, so the sections code adds
    after it (Archived Turns) were one open code block, in the context and the summary file."""
    body = GOOD_SUMMARY.format(n=1)
    for reply in (
        f"```markdown\n{body}```\n",
        f"Here is the summary:\n\n````md\n{body}\n````\nLet me know if you need more.",
    ):
        doc = accept_summary(reply, TIERED)
        assert doc is not None, reply
        doc.pointers = ["- 2 earlier turns were moved verbatim to `001-archive.md`"]
        text = doc.render()
        assert "```" not in text and "Let me know" not in text
        assert (
            doc.sections["Critical Context"] == SummaryDoc.parse(body).sections["Critical Context"]
        )


def test_a_fence_a_section_leaves_open_is_closed_at_its_end() -> None:
    reply = GOOD_SUMMARY.format(n=1).replace(
        "## Blocked\n- (none)", "## Blocked\n- pytest fails:\n```\nE   AssertionError: 1 != 2"
    )
    doc = accept_summary(reply, TIERED)
    assert doc is not None
    assert doc.sections["Blocked"] == "- pytest fails:\n```\nE   AssertionError: 1 != 2\n```"
    assert doc.sections["Key Decisions"] == "- Use the simple fix."
