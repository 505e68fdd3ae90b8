"""What ``agentsh -p`` tells a person on stderr while it works (stdout is only the answer)."""

from __future__ import annotations

import io

from agentsh.events import CompactionFailed, CompactionFinished, Tier
from agentsh.headless.output import progress as _progress


def test_a_compaction_is_reported_on_stderr_with_its_tokens_and_archive() -> None:
    err = io.StringIO()
    _progress(CompactionFinished("e1", Tier.SUMMARIZE, 142_000, 31_000, "/w/s/001-summary.md"), err)
    assert err.getvalue() == (
        "agentsh: context compacted (Summarize): 142,000 -> 31,000 tokens; "
        "archive /w/s/001-summary.md\n"
    )


def test_a_failed_compaction_is_a_warning_not_silence() -> None:
    err = io.StringIO()
    _progress(CompactionFailed(Tier.TRUNCATE, "cannot write the workspace file: disk full"), err)
    assert err.getvalue() == (
        "agentsh: warning: Truncate compaction failed: cannot write the workspace file: disk full\n"
    )
