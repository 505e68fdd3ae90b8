"""Phase-1 savings on a recorded tool-heavy session, with no model call.

The session is recorded to a JSONL file first (a seeded generator plays a realistic coding
session: reading files, often the same ones again, running the tests after every change with
the same failures repeated, grepping, writing whole files, long build logs) and then loaded
back through the session reader like any other session. Phase 1 (dedupe identical outputs,
one-line stubs for outputs older than the kept turns, shortened long tool arguments) runs with
the MoveToWorkspace rule (10 kept turns); the figure is the share of the context's message
tokens it removes.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TURNS = 40
SEED = 7


def record_session(folder: Path) -> Path:
    from agentsh.session.entries import Role, StopReason, ToolCall, Usage
    from agentsh.session.session import Session

    rng = random.Random(SEED)
    session = Session.create(folder, folder)
    files = {f"src/pkg/mod_{i}.py": 40 + rng.randrange(200) for i in range(12)}
    versions = dict.fromkeys(files, 0)  # an edit changes the file, so a re-read differs
    calls = 0

    def failures(turn: int) -> str:
        # Fewer failures as the work goes on; the same list repeats until the next fix lands.
        left = max(0, 6 - turn // 7)
        if not left:
            return "120 passed in 3.2s"
        return (
            "\n".join(
                f"FAILED tests/test_mod_{i}.py::test_case_{i} - AssertionError: expected {i} "
                f"got {i + 1}"
                for i in range(left)
            )
            + f"\n{left} failed, {120 - left} passed in 3.4s"
        )

    def source(path: str, lines: int) -> str:
        version = versions[path]
        return "\n".join(
            f"{n + 1:6d}\t    value_{n} = compute_{(n + version) % 7}(arg, {n})  # {path}"
            for n in range(lines)
        )

    def step(name: str, args: dict[str, object], output: str, **details: object) -> None:
        nonlocal calls
        calls += 1
        call = ToolCall(f"call_{calls:05d}", name, json.dumps(args))
        session.append_message(
            Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
        )
        session.append_tool_result(call.id, name, output, details=dict(details))

    for turn in range(TURNS):
        session.append_message(Role.USER, f"Step {turn}: make the next failing test pass.")
        for _ in range(rng.randrange(1, 4)):
            path = rng.choice(list(files))
            step("read", {"path": path}, source(path, files[path]), total_lines=files[path])
        if rng.random() < 0.5:
            step(
                "grep",
                {"pattern": "compute_3", "path": "src"},
                "\n".join(f"src/pkg/mod_{i}.py:{i * 7}: compute_3(arg)" for i in range(40)),
            )
        path = rng.choice(list(files))
        versions[path] += 1
        if rng.random() < 0.3:
            step("write", {"path": path, "content": source(path, files[path])}, f"wrote {path}")
        else:
            step("edit", {"path": path, "old": "compute_1", "new": "compute_2"}, "1 change")
        tests = failures(turn)
        step("bash", {"command": "pytest -q"}, tests, exit_code=0 if "failed" not in tests else 1)
        if rng.random() < 0.25:
            log = "\n".join(f"[build] compiling unit {i}" for i in range(300))
            log += f"\nbuild {turn} finished"
            step("bash", {"command": "make build"}, log, exit_code=0)
        session.append_message(
            Role.ASSISTANT,
            f"Done with step {turn}.",
            usage=Usage(input_tokens=0),
            stop_reason=StopReason.STOP,
        )
    session.close()
    assert session.path is not None
    return session.path


def main() -> None:
    from agentsh.config import ContextSettings
    from agentsh.context.accounting import Accounting
    from agentsh.context.prune import prune
    from agentsh.context.view import turn_starts
    from agentsh.llm.tokens import estimate_tokens
    from agentsh.session.session import Session

    folder = Path(tempfile.mkdtemp(prefix="agentsh-bench-"))
    path = record_session(folder)
    session = Session.open(path, lock=False)
    accounting = Accounting(session, estimate_tokens)
    view = accounting.view()
    before = accounting.messages_tokens()
    settings = ContextSettings()
    starts = turn_starts(view.entries)
    old_before = starts[-settings.move_to_workspace_keep_turns]
    result = prune(view, old_before, settings, estimate_tokens)
    share = 100.0 * result.saved_tokens / before
    print(f"recorded session: {path.stat().st_size:,} bytes, {len(view.entries):,} entries")
    print(f"context before phase 1: {before:,} tokens")
    print(
        f"deduplicated {result.deduplicated}, stubbed {result.stubbed}, "
        f"shortened arguments of {result.shortened_calls} calls"
    )
    print(f"saved: {result.saved_tokens:,} tokens")
    print(f"phase1_savings: {share:.1f} %")


if __name__ == "__main__":
    main()
