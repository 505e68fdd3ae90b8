"""What ``agentsh -p`` tells a person on stderr while it works (stdout is only the answer)."""

from __future__ import annotations

import io

from agentsh.events import CompactionFailed, CompactionFinished, Tier
from agentsh.headless.output import progress as _progress


def test_a_compaction_is_reported_on_stderr_with_its_tokens_and_files() -> None:
    # A Summarize writes the turns verbatim, then its summary: each named for what it holds
    # (the summary was called the archive).
    err = io.StringIO()
    done = CompactionFinished(
        "e1",
        Tier.SUMMARIZE,
        142_000,
        31_000,
        "/w/s/002-summary.md",
        archive_file="/w/s/001-archive.md",
        summary_file="/w/s/002-summary.md",
    )
    _progress(done, err)
    assert err.getvalue() == (
        "agentsh: context compacted (Summarize): 142,000 -> 31,000 tokens; "
        "summary /w/s/002-summary.md; archive /w/s/001-archive.md\n"
    )


def test_a_compaction_that_archived_nothing_names_no_archive() -> None:
    # Seen in a -p run on an 8k window: "8,094 -> 6,470 tokens; archive ; pruned tool output".
    err = io.StringIO()
    note = "pruned tool output only (no model call): 3 old tool outputs shortened"
    _progress(CompactionFinished("e1", Tier.TRUNCATE, 8_094, 6_470, "", note), err)
    assert err.getvalue() == (
        f"agentsh: context compacted (Truncate): 8,094 -> 6,470 tokens; {note}\n"
    )


def test_a_failed_compaction_is_a_warning_not_silence() -> None:
    err = io.StringIO()
    _progress(CompactionFailed(Tier.TRUNCATE, "cannot write the workspace file: disk full"), err)
    assert err.getvalue() == (
        "agentsh: warning: Truncate compaction failed: cannot write the workspace file: disk full\n"
    )
