"""``agentsh acp`` makes its model calls through the model worker: litellm never loads in the
agent's own process, whatever arrives first after ``initialize`` (a ``session/new`` at once
built its agent with the in-process client while the worker started for nothing: both paid
litellm's import).

Every process started with this test's module path records the litellm import it makes (a
``sitecustomize`` watching imports: the first of litellm's own modules, since agentsh looks
``litellm`` up without importing it to find its bundled files), so the agent's and the worker's
are told apart.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient, spawn_acp
from tests.fakes.server import Reply

WATCH = """
import importlib.abc, json, os, sys

class _Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith("litellm.") and not getattr(self, "seen", False):
            self.seen = True
            with open(os.environ["LITELLM_IMPORTS"], "a") as log:
                log.write(json.dumps(sys.argv[:1]) + "\\n")
        return None

sys.meta_path.insert(0, _Watch())
"""


@pytest.mark.asyncio
async def test_the_agents_own_process_never_imports_litellm(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(textwrap.dedent(WATCH))
    imports = tmp_path / "litellm-imports.jsonl"
    paths = [str(hooks), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {"PYTHONPATH": os.pathsep.join(paths), "LITELLM_IMPORTS": str(imports)}
    async with spawn_acp(tmp_path / "acp", EditorClient(), extra_env=env) as agent:
        agent.server.script(Reply(text="through the worker"))
        session = await agent.new_session()  # at once after initialize
        assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    importers = [json.loads(line)[0] for line in imports.read_text().splitlines()]
    assert importers, "no process imported litellm: the watch did not run"
    assert all(Path(argv0).name == "worker.py" for argv0 in importers), importers
