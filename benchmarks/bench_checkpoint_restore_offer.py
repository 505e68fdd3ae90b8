"""How long the TUI's restore offer takes to appear after a move in the tree, and the restore
after ``y``, on a 10,000-file git repository.

A session of 10 user messages each editing 3 files is recorded with the real checkpointer; then
the leaf goes back to each message in turn and the offer is planned (what would change, with
+/- lines: :meth:`SessionFiles.plan`), and restored (checkpoint the files as they are, write,
record: :meth:`SessionFiles.restore`). Baseline in the same run: ``git status --porcelain``.

    .venv/bin/python benchmarks/bench_checkpoint_restore_offer.py [--files N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from checkpoint_bench import environment, git_status_ms, make_repo, median, temp_dir


async def figures(files: int, prompts: int = 10, edits: int = 3) -> dict[str, float]:
    from agentsh.checkpoints.checkpointer import Checkpointer
    from agentsh.checkpoints.session_files import SessionFiles
    from agentsh.config import load_environment
    from agentsh.session.entries import Role
    from agentsh.session.session import Session

    tmp = temp_dir("agentsh-bench-offer-")
    environment(tmp)
    root = tmp / "repo"
    root.mkdir()
    names = make_repo(root, files)
    env = load_environment(root)
    session = Session.create(env.user.project_sessions_dir(root), root)
    checkpointer = Checkpointer(env.user, root, env.settings.checkpoints)
    files_api = SessionFiles(checkpointer, lambda: session)
    rnd = random.Random(9)
    messages: list[str] = []
    for prompt in range(prompts):
        messages.append(session.append_message(Role.USER, f"edit batch {prompt}").id)
        checkpointer.checkpoint(session, "user")
        for name in rnd.sample(names, edits):
            path = root / name
            path.write_text(path.read_text() + f"# edited in batch {prompt}\n")
            session.append_tool_result(f"call{prompt}", "edit", "ok")
            checkpointer.checkpoint(session, "tool")
        session.append_message(Role.ASSISTANT, f"done {prompt}")
    baseline = [git_status_ms(root) for _ in range(5)]
    plans: list[float] = []
    restores: list[float] = []
    changed: list[int] = []
    for target in reversed(messages):
        leaving = session.leaf_id
        session.move_leaf(target)
        start = time.perf_counter()
        plan = await files_api.plan(target)
        plans.append((time.perf_counter() - start) * 1000)
        changed.append(len(plan.items))
        start = time.perf_counter()
        await files_api.restore(plan, leaving=leaving)
        restores.append((time.perf_counter() - start) * 1000)
    baseline += [git_status_ms(root) for _ in range(5)]
    checkpointer.close()
    session.close()
    return {
        "git_status_ms": median(baseline),
        "plan_ms": median(plans),
        "restore_ms": median(restores),
        "files_changed": median([float(c) for c in changed]),
        "moves": float(len(plans)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    result = asyncio.run(figures(args.files))
    print(f"files: {args.files}, moves: {int(result['moves'])}")
    print(f"files changed per restore (median): {result['files_changed']:.0f}")
    print(f"baseline git_status_p50: {result['git_status_ms']:.1f} ms")
    print(f"restore (checkpoint first, write, record) p50: {result['restore_ms']:.1f} ms")
    print(f"checkpoint_restore_offer_p50: {result['plan_ms']:.1f} ms")


if __name__ == "__main__":
    main()
