"""Prefix reuse over a 300-turn session, and the input tokens compaction saves.

A scripted 300-turn coding session (reads, commands, some failing, edits; one to four steps a
turn) is replayed through the ContextManager exactly as the agent loop drives it: ``prepare``
before every model call, each reply carrying the usage a provider would report. Twice: on a
32k window with the tiers on, and on a window so large nothing is ever compacted (the
baseline). It prints

- ``prefix_reuse``: of the requests that follow another with no compaction in between, the
  share whose message list starts with the previous request's whole list, byte for byte (what
  a provider's prompt cache can reuse; goal >= 90 %);
- ``cacheable_share``: of all the input tokens sent with compaction, the share that repeats the
  start of the previous request (what a prompt cache with a marker at the end of each request
  reads; compaction turns included);
- ``input_tokens_ratio``: the input tokens sent with compaction / without it.

Both figures are deterministic (no timing): the same script gives the same numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TURNS = 300
WINDOW = 32_768
SYSTEM = "You are a coding agent working in the user's project. " * 40


async def replay(home: Path, window: int, *, auto: bool) -> tuple[int, int, int, int, float]:
    """(requests after another without compaction, of those starting with the previous one,
    input tokens sent, compactions, share of the sent characters repeating the last request)."""
    import dataclasses

    from agentsh.config import ContextSettings, Settings
    from agentsh.context.manager import ContextManager
    from agentsh.events import CompactionFinished, Event
    from agentsh.paths import UserPaths
    from agentsh.session.entries import Role, StopReason, ToolCall, Usage
    from agentsh.session.session import Session
    from tests.context.builders import unique_output
    from tests.context.conftest import GOOD_SUMMARY

    rng = random.Random(300)
    user = UserPaths(home / "config", home / "data", home / "cache")
    session = Session.create(None, home)
    compacted = [0]

    def emit(event: Event) -> None:
        if isinstance(event, CompactionFinished):
            compacted[0] += 1

    async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> str:
        return GOOD_SUMMARY.format(n=compacted[0])

    settings = dataclasses.replace(
        Settings(), context=dataclasses.replace(ContextSettings(), auto_compact=auto)
    )
    manager = ContextManager(
        session, settings, user, model="bench/model", window=window, summarize=summarize, emit=emit
    )
    previous: str | None = None
    previous_list: list[str] = []
    eligible = reused = sent = 0
    chars_sent = chars_repeated = 0
    seen_compactions = 0

    async def request() -> None:
        nonlocal previous, previous_list, eligible, reused, sent, seen_compactions
        nonlocal chars_sent, chars_repeated
        messages = await manager.prepare(SYSTEM, [])
        encoded = [json.dumps(m, sort_keys=True) for m in messages]
        sent += manager.status().used
        chars_sent += sum(map(len, encoded))
        for old, new in zip(previous_list, encoded, strict=False):
            if old != new:
                break
            chars_repeated += len(new)
        if previous is not None and compacted[0] == seen_compactions:
            eligible += 1
            if encoded[: len(previous_list)] == previous_list:
                reused += 1
        previous, previous_list = "x", encoded
        seen_compactions = compacted[0]

    def reply(text: str, calls: tuple[ToolCall, ...] = ()) -> None:
        usage = Usage(input_tokens=manager.status().used, output_tokens=40)
        stop = StopReason.TOOL_CALLS if calls else StopReason.STOP
        entry = session.append_message(
            Role.ASSISTANT, text, tool_calls=calls, usage=usage, stop_reason=stop
        )
        manager.record_usage(entry)

    for n in range(TURNS):
        session.append_message(Role.USER, f"task {n}: continue with part {n} of the plan")
        await request()
        for k in range(rng.randint(1, 4)):
            size = rng.randint(60, 900)
            kind = rng.random()
            if kind < 0.2:
                call = ToolCall(f"c{n}_{k}", "bash", json.dumps({"command": f"pytest -k t{n}"}))
                output, error, details = unique_output(size, f"e{n}{k}"), True, {"exit_code": 1}
            elif kind < 0.4:
                args = {"path": f"src/m{n}.py", "old": "a" * 40, "new": "b" * 40}
                call = ToolCall(f"c{n}_{k}", "edit", json.dumps(args))
                output, error, details = f"edited src/m{n}.py", False, {}
            else:
                call = ToolCall(f"c{n}_{k}", "read", json.dumps({"path": f"src/m{n}_{k}.py"}))
                output, error, details = unique_output(size, f"r{n}{k}"), False, {}
            reply("", (call,))
            session.append_tool_result(call.id, call.name, output, is_error=error, details=details)
            await request()
        reply(f"Part {n} is done.")
    return eligible, reused, sent, compacted[0], chars_repeated / max(1, chars_sent)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["AGENTSH_HOME"] = str(home)
        eligible, reused, with_tokens, compactions, cacheable = asyncio.run(
            replay(home, WINDOW, auto=True)
        )
        _e, _r, without_tokens, none, _c = asyncio.run(replay(home, 10**9, auto=True))
    assert none == 0
    share = 100.0 * reused / max(1, eligible)
    ratio = with_tokens / max(1, without_tokens)
    print(f"turns: {TURNS}, window: {WINDOW:,} tokens, compactions: {compactions}")
    print(f"requests compared: {eligible:,}, starting with the previous request: {reused:,}")
    print(f"input tokens sent: {with_tokens:,} with compaction, {without_tokens:,} without")
    print(f"cacheable_share: {100 * cacheable:.1f} % of the characters sent")
    print(f"input_tokens_ratio: {ratio:.3f} x")
    print(f"prefix_reuse: {share:.1f} %")


if __name__ == "__main__":
    main()
