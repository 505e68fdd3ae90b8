"""End to end: the real ``agentsh`` in a tmux pane against the scripted server process.

It types a prompt with send-keys and reads the streamed answer from capture-pane, then checks
that the session file on disk holds the exchange. Skips only if tmux is not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.tmux import ScriptedServerProcess, TmuxPane, tmux_available
from tests.fakes.warm_workers import warm_worker_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not tmux_available(), reason="tmux is not installed"),
]

ROOT = Path(__file__).resolve().parents[2]


def _env(home: Path) -> dict[str, str]:
    return {
        "AGENTSH_HOME": str(home),
        "OPENAI_API_KEY": "sk-test",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "AGENTSH_NO_OLLAMA_PROBE": "1",
        "PYTHONPATH": str(ROOT),
        "HOME": os.environ.get("HOME", str(home)),
        "PATH": os.environ.get("PATH", ""),
        "TERM": "xterm-256color",
        **warm_worker_env(),
    }


def test_agentsh_answers_a_typed_prompt_in_a_real_terminal(tmp_path: Path, project: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["The answer is **forty-two**, as computed by the e2e test."]))
    home = Path(os.environ["AGENTSH_HOME"])
    with ScriptedServerProcess(script, root=ROOT) as server:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url]  # fmt: skip
        with TmuxPane(command, cwd=project, env=_env(home), width=100, height=30) as pane:
            pane.wait_for(lambda s: "Message agentsh" in s, timeout=30)
            pane.wait_for(lambda s: "loading…" not in s and "test-model" in s, timeout=60)
            pane.type("What is six times seven?")
            pane.send("Enter")
            # the whole reply: "forty-two" shows while the rest still streams in (load 11)
            pane.wait_for(lambda s: "computed by the e2e test" in s, timeout=60)
            screen = pane.screen()
            assert "What is six times seven?" in screen
            assert "computed by the e2e test" in screen
            pane.send("C-q")
    files = list((home / "data" / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    entries = [json.loads(line) for line in files[0].read_text().splitlines()[1:]]
    messages = [(e["role"], e["content"]) for e in entries if e["type"] == "message"]
    assert messages[0] == ("user", "What is six times seven?")
    assert messages[-1][0] == "assistant" and "forty-two" in messages[-1][1]


def test_the_files_follow_a_branch_switch_after_the_restore_prompt(
    tmp_path: Path, project: Path
) -> None:
    """Issue 17 as a user sees it: a write on branch A, the message edited and sent again
    (branch B), each move answered at the restore prompt, the disk checked after each."""
    notes = project / "notes.txt"
    notes.write_text("original\n")

    def write(content: str) -> dict[str, object]:
        call = {"name": "write", "arguments": {"path": "notes.txt", "content": content}}
        return {"tool_calls": [call]}

    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([write("branch A\n"), "A is done.", write("branch B\n"), "B is done."])
    )
    home = Path(os.environ["AGENTSH_HOME"])
    with ScriptedServerProcess(script, root=ROOT) as server:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url, "--approve", "all"]  # fmt: skip
        with TmuxPane(command, cwd=project, env=_env(home), width=110, height=34) as pane:
            pane.wait_for(lambda s: "loading…" not in s and "test-model" in s, timeout=60)
            pane.type("rewrite the notes")
            pane.send("Enter")
            pane.wait_for(lambda s: "A is done." in s, timeout=60)
            assert notes.read_text() == "branch A\n"

            # Edit the message and send it again (branch B): the conversation goes back
            # before it, and so can the files, when it is sent (issue 14, item 7).
            pane.send("M-Up")
            pane.wait_for(lambda s: "█ you" in s, timeout=30)  # the message is selected
            pane.send("Enter")
            pane.wait_for(lambda s: "Editing an earlier message" in s, timeout=30)
            assert notes.read_text() == "branch A\n"  # nothing moved yet
            pane.send("Enter")
            pane.wait_for(lambda s: "M notes.txt  +1 -1" in s, timeout=30)
            pane.answer("y")
            pane.wait_for(lambda s: "B is done." in s, timeout=60)
            assert notes.read_text() == "branch B\n"

            pane.send("M-Left")  # back to branch A; no summary of B
            pane.wait_for(lambda s: "Leaving this branch" in s, timeout=30)
            pane.answer("n")
            pane.wait_for(lambda s: "M notes.txt  +1 -1" in s, timeout=30)
            pane.answer("d")
            pane.wait_for(lambda s: "-branch B" in s and "+branch A" in s, timeout=30)
            pane.send("y")
            pane.wait_for(lambda s: "Restored 1 file: notes.txt" in s, timeout=30)
            assert notes.read_text() == "branch A\n"

            pane.send("F4")  # the tree pane marks the entries that changed files
            pane.wait_for(lambda s: "✎ 1 file" in s, timeout=30)


def test_what_the_user_typed_shows_verbatim_and_the_indicator_runs_until_esc(
    tmp_path: Path, project: Path
) -> None:
    """Issue 14: a multi-line message with ``__init__``, ``*args`` and ``<Foo>`` is shown as
    typed; a slow reply shows the working indicator with its elapsed seconds; Esc stops it."""
    slow = {"text": " ".join(f"word{i}" for i in range(300)), "delay": 0.2}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([slow]))
    home = Path(os.environ["AGENTSH_HOME"])
    indicator = re.compile(r"(waiting for the model|writing the reply) · (\d+)s · Esc to cancel")
    with ScriptedServerProcess(script, root=ROOT) as server:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url]  # fmt: skip
        with TmuxPane(command, cwd=project, env=_env(home), width=80, height=24) as pane:
            pane.wait_for(lambda s: "loading…" not in s and "test-model" in s, timeout=90)
            pane.type("def __init__(self, *args, **kwargs):")
            pane.send("C-j")
            pane.type("    return <Foo>  # a_b *c*")
            pane.send("Enter")
            pane.wait_for(lambda s: "▌     return <Foo>" in s, timeout=30)  # in the chat
            screen = pane.screen()
            assert "▌ def __init__(self, *args, **kwargs):" in screen
            assert "▌     return <Foo>  # a_b *c*" in screen
            # The indicator counts the seconds while the reply streams slowly.
            pane.wait_for(lambda s: (m := indicator.search(s)) is not None and int(m[2]) >= 2,
                          timeout=30)  # fmt: skip
            pane.send("Escape")
            pane.wait_for(lambda s: "turn cancelled" in s and "to cancel" not in s, timeout=30)
            pane.send("C-q")


def _workers_under(pid: int) -> list[int]:
    """The model workers among the processes under ``pid`` (children, their children...)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:  # a process of the tree (a git call, say) may end as it is listed
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            todo += children
            for child in children:
                with contextlib.suppress(OSError):
                    if b"agentsh.llm.worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                        found.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_a_quit_right_after_the_first_key_leaves_no_model_worker_behind(
    tmp_path: Path, project: Path
) -> None:
    """The first key starts the model worker even while the agent loads; a quit then (the
    worker still importing litellm) ends it with agentsh."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["unused"]))
    home = Path(os.environ["AGENTSH_HOME"])
    with ScriptedServerProcess(script, root=ROOT) as server:
        command = [sys.executable, "-m", "agentsh", "-m", "openai/test-model",
                   "--api-base", server.base_url]  # fmt: skip
        # A worker of its own, importing litellm when the quit comes (not one forked warm).
        cold = {**_env(home), "AGENTSH_WARM_WORKER_S": "0"}
        with TmuxPane(command, cwd=project, env=cold, width=100, height=30) as pane:
            pane.wait_for(lambda s: "Message agentsh" in s, timeout=60)
            pid = pane.pid()
            pane.type("h")
            deadline = time.monotonic() + 60
            while not (workers := _workers_under(pid)):
                assert time.monotonic() < deadline, "the first key started no model worker"
                time.sleep(0.02)
            pane.send("C-q")
            deadline = time.monotonic() + 60
            while any(_running(p) for p in (pid, *workers)):
                assert time.monotonic() < deadline, "a process outlived the quit"
                time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
