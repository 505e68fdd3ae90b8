"""Model facts from litellm's local price list, overrides, and the SPEC §1 model choice."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentsh.config import ModelSettings
from agentsh.llm.model_name import ModelSource
from agentsh.llm.models import (
    DEFAULT_LOCAL_WINDOW,
    DEFAULT_WINDOW,
    HELP_COLUMNS,
    PROVIDERS,
    api_base_for,
    choose_model,
    chosen_api_base,
    find_ollama_model,
    key_env_var,
    model_info,
    no_model_help,
)


def test_a_known_model_gets_window_output_limit_and_prices_from_litellm() -> None:
    info = model_info("openai/gpt-4o")

    assert info.known
    assert info.window == 128_000
    assert info.max_output_tokens == 16_384
    assert info.input_cost_per_token == pytest.approx(2.5e-6)
    assert info.output_cost_per_token == pytest.approx(1e-5)


def test_an_unknown_model_gets_defaults_without_crashing_or_printing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    info = model_info("openai/no-such-model-anywhere")

    assert not info.known
    assert info.window == DEFAULT_WINDOW
    assert info.input_cost_per_token == 0.0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_settings_override_window_output_limit_and_prices() -> None:
    settings = ModelSettings(
        window=50_000, max_output_tokens=4_000, input_cost_per_mtok=1.0, output_cost_per_mtok=3.0
    )

    info = model_info("openai/gpt-4o", settings)

    assert (info.window, info.max_output_tokens) == (50_000, 4_000)
    assert info.input_cost_per_token == pytest.approx(1e-6)
    assert info.output_cost_per_token == pytest.approx(3e-6)
    assert model_info("openai/gpt-4o").window == 128_000  # the cache is keyed by the overrides


def test_local_models_assume_a_modest_window_without_asking_the_server() -> None:
    assert model_info("ollama_chat/qwen2.5-coder").window == DEFAULT_LOCAL_WINDOW
    assert model_info("ollama_chat/qwen2.5-coder", ModelSettings(window=8192)).window == 8192


def test_key_env_var_follows_the_provider_prefix() -> None:
    assert key_env_var("anthropic/claude-sonnet-4-6") == "ANTHROPIC_API_KEY"
    assert key_env_var("openai/test-model") == "OPENAI_API_KEY"
    assert key_env_var("gpt-4o") == "OPENAI_API_KEY"
    assert key_env_var("gemini/gemini-2.5-pro") == "GEMINI_API_KEY"
    assert key_env_var("ollama_chat/llama3") is None


def test_every_default_provider_model_is_known_to_litellm_or_routed_by_prefix() -> None:
    for provider in PROVIDERS:
        assert provider.default_model.startswith(provider.prefix + "/")
        if provider.prefix != "openrouter":  # openrouter models are not in litellm's price list
            assert model_info(provider.default_model).known, provider.default_model


def test_an_explicit_model_wins_in_order_cli_env_config() -> None:
    settings = ModelSettings(name="openai/from-config", api_base="http://config/v1")
    env = {"AGENTSH_MODEL": "openai/from-env", "ANTHROPIC_API_KEY": "x" * 20}

    cli = choose_model(settings, env, cli_model="openai/from-cli", cli_api_base="http://cli/v1")
    from_env = choose_model(settings, env)
    from_config = choose_model(settings, {"ANTHROPIC_API_KEY": "x" * 20})

    assert cli is not None and (cli.model, cli.api_base, cli.source) == (
        "openai/from-cli",
        "http://cli/v1",
        ModelSource.CLI,
    )
    assert from_env is not None and (from_env.model, from_env.source) == (
        "openai/from-env",
        ModelSource.ENV,
    )
    assert from_config is not None and (from_config.model, from_config.api_base) == (
        "openai/from-config",
        "http://config/v1",
    )


def test_the_api_base_follows_the_same_order_cli_env_config() -> None:
    settings = ModelSettings(name="openai/m", api_base="http://config/v1")
    env = {"AGENTSH_API_BASE": "http://env/v1"}

    from_cli = choose_model(settings, env, cli_api_base="http://cli/v1")
    from_env = choose_model(settings, env)
    from_config = choose_model(settings, {})

    assert from_cli is not None and from_cli.api_base == "http://cli/v1"
    assert from_env is not None and from_env.api_base == "http://env/v1"
    assert from_config is not None and from_config.api_base == "http://config/v1"


def test_the_first_provider_with_a_key_is_chosen() -> None:
    env = {"OPENAI_API_KEY": "sk-one", "GEMINI_API_KEY": "g-two", "AGENTSH_NO_OLLAMA_PROBE": "1"}

    choice = choose_model(ModelSettings(), env)

    assert choice is not None
    assert choice.model == "openai/gpt-4.1"
    assert choice.source == ModelSource.PROVIDER_KEY
    assert choice.detail == "OPENAI_API_KEY"
    anthropic = choose_model(ModelSettings(), {**env, "ANTHROPIC_API_KEY": "a"})
    assert anthropic is not None and anthropic.model.startswith("anthropic/claude-")


def test_an_empty_key_does_not_count() -> None:
    env = {"OPENAI_API_KEY": "  ", "AGENTSH_NO_OLLAMA_PROBE": "1"}

    assert choose_model(ModelSettings(), env) is None


class _FakeOllama(BaseHTTPRequestHandler):
    models: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        body = json.dumps({"models": self.models}).encode()
        self.send_response(200 if self.path == "/api/tags" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def fake_ollama() -> Iterator[tuple[str, type[_FakeOllama]]]:
    handler = type("Handler", (_FakeOllama,), {"models": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_local_ollama_server_is_used_when_no_key_is_set(
    fake_ollama: tuple[str, type[_FakeOllama]],
) -> None:
    url, handler = fake_ollama
    handler.models = [{"name": "nomic-embed-text:latest"}, {"name": "qwen2.5-coder:7b"}]

    choice = choose_model(ModelSettings(ollama_url=url + "/"), {})

    assert choice is not None
    assert (choice.model, choice.api_base, choice.source) == (
        "ollama_chat/qwen2.5-coder:7b",
        url,
        ModelSource.OLLAMA,
    )


def test_an_ollama_server_without_models_or_no_server_means_no_model(
    fake_ollama: tuple[str, type[_FakeOllama]],
) -> None:
    url, _ = fake_ollama

    assert choose_model(ModelSettings(ollama_url=url), {}) is None
    assert find_ollama_model("http://127.0.0.1:9", 0.3) is None


def test_the_ollama_probe_is_skipped_when_asked() -> None:
    calls: list[str] = []

    def probe(url: str, timeout: float) -> str | None:
        calls.append(url)
        return "llama3"

    assert (
        choose_model(ModelSettings(), {"AGENTSH_NO_OLLAMA_PROBE": "1"}, probe_ollama=probe) is None
    )
    assert calls == []
    choice = choose_model(ModelSettings(), {}, probe_ollama=probe)
    assert choice is not None and choice.model == "ollama_chat/llama3"
    assert calls == ["http://127.0.0.1:11434"]


def test_the_no_model_help_fits_one_screen_and_names_every_way(tmp_path: Path) -> None:
    config_file = tmp_path / "home" / "config" / "config.toml"
    text = no_model_help(config_file)
    lines = text.splitlines()

    assert len(lines) <= 30
    assert max(len(line) for line in lines if str(config_file) not in line) <= HELP_COLUMNS
    for needle in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "-m ",
        "--api-base",
        "AGENTSH_MODEL",
        "[model]",
        "api_base",
        "Ollama",
    ):
        assert needle in text


def test_the_no_model_help_names_the_config_file_agentsh_reads(tmp_path: Path) -> None:
    """With AGENTSH_HOME=DIR the file is DIR/config/config.toml; the help never sends the
    user to the project's .agentsh/config.toml, where the server cannot be set."""
    from agentsh.paths import UserPaths

    user = UserPaths.from_env({"AGENTSH_HOME": str(tmp_path)})
    text = no_model_help(user.config_file)
    assert f"{tmp_path}/config/config.toml" in text
    assert ".agentsh" not in text
    home = no_model_help(Path.home() / ".config" / "agentsh" / "config.toml")
    assert "~/.config/agentsh/config.toml" in home


def test_every_model_goes_to_the_server_the_user_chose() -> None:
    settings = ModelSettings(api_base="http://config:1/v1")
    assert chosen_api_base(settings, {}, "http://cli:1/v1") == "http://cli:1/v1"
    assert chosen_api_base(settings, {"AGENTSH_API_BASE": "http://env:1/v1"}) == "http://env:1/v1"
    assert chosen_api_base(settings, {}) == "http://config:1/v1"
    assert chosen_api_base(ModelSettings(), {}) is None
    assert api_base_for("anthropic/claude-x", "http://cli:1/v1", settings) == "http://cli:1/v1"
    assert api_base_for("anthropic/claude-x", None, settings) is None
    local = ModelSettings(ollama_url="http://127.0.0.1:11434/")
    assert api_base_for("ollama_chat/qwen", None, local) == "http://127.0.0.1:11434"
