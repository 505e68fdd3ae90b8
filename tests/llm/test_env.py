"""Import hygiene: light modules stay light; litellm imports offline and silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_python(
    code: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM_", "TIKTOKEN_"))}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("CUSTOM_TIKTOKEN_CACHE_DIR", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_importing_tokens_models_client_and_env_imports_neither_litellm_nor_tiktoken() -> None:
    result = run_python(
        """
        import json, sys
        import agentsh.llm.tokens, agentsh.llm.models, agentsh.llm.client, agentsh.llm.env
        from agentsh.llm.tokens import estimate_tokens
        estimate_tokens("hello")
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("litellm", "tiktoken", "openai", "httpx"))
        print(json.dumps(heavy))
        """
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_litellm_imports_offline_quietly_and_counts_with_the_shipped_encodings() -> None:
    # Every outgoing connection is refused and recorded: importing litellm, looking up an unknown
    # model and counting tokens must not try one.
    result = run_python(
        """
        import json, os, socket, sys
        attempts = []
        real_connect = socket.socket.connect
        def refuse(self, address):
            attempts.append(str(address))
            raise OSError("network disabled in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = lambda self, address: refuse(self, address)
        socket.create_connection = lambda address, *a, **k: refuse(None, address)
        socket.getaddrinfo = lambda host, port, *a, **k: refuse(None, (host, port))

        from agentsh.llm.env import import_litellm, preload
        preload("openai/gpt-4o")
        litellm = import_litellm()
        from agentsh.llm.models import model_info
        from agentsh.llm.tokens import TokenCounter
        unknown = model_info("openai/no-such-model")
        known = model_info("anthropic/claude-sonnet-4-6")
        counts = [TokenCounter(m).count("hello world") for m in ("gpt-4o", "claude-x")]
        result = {
            "attempts": attempts,
            "cost_map": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"),
            "hf": os.environ.get("HF_HUB_OFFLINE"),
            "tiktoken_dir": os.environ.get("TIKTOKEN_CACHE_DIR"),
            "custom_dir": os.environ.get("CUSTOM_TIKTOKEN_CACHE_DIR"),
            "suppress": litellm.suppress_debug_info,
            "unknown_known": unknown.known,
            "known_window": known.window,
            "counts": counts,
        }
        sys.stdout.write("RESULT=" + json.dumps(result) + "\\n")
        """
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1, f"unexpected output: {result.stdout!r}"
    assert result.stderr == ""
    data = json.loads(lines[0].removeprefix("RESULT="))
    assert data["attempts"] == []
    assert data["cost_map"] == "True"
    assert data["hf"] == "1"
    assert data["tiktoken_dir"] == data["custom_dir"]
    assert Path(data["tiktoken_dir"]).parts[-2:] == ("litellm_core_utils", "tokenizers")
    assert data["suppress"] is True
    assert data["unknown_known"] is False
    assert data["known_window"] > 100_000
    assert data["counts"] == [2, 2]


def test_the_warm_up_call_loads_what_the_first_call_would_without_a_connection() -> None:
    # The model worker warms up after its import so that the user's first request does not
    # pay litellm's first-call imports (99 modules, the default encoding: 0.7-1 s) after
    # Enter. The warm-up itself tries no connection; the first real call then imports next
    # to nothing.
    from tests.fakes.server import ScriptedServer

    with ScriptedServer().start() as server:
        server.script("hello")
        result = run_python(
            f"""
            import asyncio, json, socket, sys
            attempts = []
            real_connect = socket.socket.connect
            def refuse(self, address):
                attempts.append(str(address))
                raise OSError("network disabled during the warm-up")
            socket.socket.connect = refuse

            from agentsh.llm.env import import_litellm, warm_first_call
            import_litellm()
            warmed = warm_first_call()
            socket.socket.connect = real_connect

            from agentsh.config import ModelSettings
            from agentsh.llm.client import LLMClient
            client = LLMClient("openai/test-model", settings=ModelSettings(),
                               api_base="{server.base_url}", api_key="sk-test-0123456789")
            before = set(sys.modules)

            async def call():
                return [item async for item in client.stream([{{"role": "user", "content": "hi"}}])]

            items = asyncio.run(call())
            print(json.dumps({{"warmed": warmed, "attempts": attempts,
                               "text": items[-1].text,
                               "imported": sorted(set(sys.modules) - before)}}))
            """
        )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["warmed"] and outcome["attempts"] == []
    assert outcome["text"] == "hello"
    # Before the warm-up existed: 99 modules, litellm's proxy types and tiktoken's among them.
    # (agentsh's own model door, light, is imported at the first call too: not what is measured.)
    theirs = [name for name in outcome["imported"] if not name.startswith("agentsh.")]
    assert len(theirs) <= 3, outcome["imported"]
