"""The one place that prepares the process for litellm and tiktoken, and imports litellm.

``import litellm`` costs about three seconds and, left alone, fetches a price list from the
internet, prints a "Provider List" banner for unknown models and logs to stderr. tiktoken alone
downloads its encodings. :func:`prepare_environment` sets the variables that make both work
offline (the model cost map shipped inside litellm, the tokenizer files shipped inside litellm,
no Hugging Face hub lookups) and must run before either library is first imported; it does not
import them. :func:`import_litellm` is the only way agentsh imports litellm: lazily, once,
thread-safe, and quietened. :func:`preload` lets a UI worker thread pay the import cost after
the first frame.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")

_lock = threading.RLock()
_litellm: ModuleType | None = None
_prepared = False
_tokenizer_dir: Path | None = None


def litellm_tokenizer_dir() -> Path | None:
    """The folder of tiktoken encodings litellm ships, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def prepare_environment() -> None:
    """Set the offline/quiet variables; idempotent, cheap, imports neither library."""
    global _prepared, _tokenizer_dir
    with _lock:
        if _prepared:
            return
        # The price list inside the installed package, never the internet (SPEC §0).
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        # litellm's token counter asks the Hugging Face hub for llama/replicate tokenizers and
        # blocks ~20 s offline; we count with tiktoken, so the hub is never needed.
        os.environ["HF_HUB_OFFLINE"] = "1"
        # litellm's import runs dotenv.load_dotenv() unless told it is not in development: a
        # .env found on the way (a project's, when agentsh runs from a venv inside it, or the
        # current folder for an embedded interpreter) could set OPENAI_API_BASE and send the
        # user's key and prompts elsewhere. agentsh reads keys from the environment only.
        os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        folder = litellm_tokenizer_dir()
        if folder is not None:
            _tokenizer_dir = folder
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
            # Without this litellm overwrites TIKTOKEN_CACHE_DIR on its first count.
            os.environ["CUSTOM_TIKTOKEN_CACHE_DIR"] = str(folder)
        _prepared = True


def tokenizer_dir() -> Path | None:
    prepare_environment()
    return _tokenizer_dir


def import_litellm() -> ModuleType:
    """litellm, imported once (about 3 s the first time), with its noise switched off."""
    global _litellm
    module = _litellm
    if module is not None:
        return module
    with _lock:
        if _litellm is None:
            prepare_environment()
            import litellm

            _quieten(litellm)
            _litellm = litellm
        return _litellm


def _quieten(litellm: ModuleType) -> None:
    # Unknown models otherwise print "Provider List: ..." and feedback banners to stdout.
    # setattr: the names differ across litellm releases and not all are declared.
    settings = {
        "suppress_debug_info": True,
        "set_verbose": False,
        "turn_off_message_logging": True,  # never log prompts or replies via callbacks
        "telemetry": False,
    }
    for name, value in settings.items():
        setattr(litellm, name, value)
    # litellm installs its own stderr handlers; a TUI must not get stray lines over its frame.
    for name in _LITELLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    # litellm trips pydantic deprecation warnings on every streamed chunk; not ours to show.
    warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
    warnings.filterwarnings("ignore", module=r"pydantic(\.|$)")
    _ignore_abandoned_provider_calls()


def _ignore_abandoned_provider_calls() -> None:
    """Keep "coroutine 'OpenAIChatCompletion.async_streaming' was never awaited" off stderr.

    ``litellm.acompletion`` builds the provider's coroutine in an executor thread and awaits it
    afterwards; a cancel (Esc, Ctrl+C) that lands in between drops it unawaited, and Python
    prints a RuntimeWarning when it is collected. Nothing leaked: the request was never sent.
    The warning names only the coroutine's qualname, so the filter lists the classes litellm's
    provider modules define (loaded by now), not a pattern that could hide agentsh's own bugs.
    """
    import re
    import sys

    names: set[str] = set()
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("litellm.llms.") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module_name:
                names.add(value.__name__)
    if names:
        alternatives = "|".join(sorted(map(re.escape, names)))
        warnings.filterwarnings(
            "ignore",
            message=rf"coroutine '(?:{alternatives})\.\w+' was never awaited",
            category=RuntimeWarning,
        )


# A made-up call (litellm's ``mock_response``: nothing leaves the process) to the generic
# OpenAI-style path every provider's streamed call shares.
_WARM_UP_CALL = {
    "model": "openai/gpt-4o-mini",
    "messages": [{"role": "user", "content": "warm-up"}],
    "mock_response": "ok",
    "stream": True,
    "stream_options": {"include_usage": True},
    "api_key": "agentsh-warm-up",
    "api_base": "http://127.0.0.1:9/v1",
    "max_retries": 0,
    "drop_params": True,
}


def warm_first_call() -> bool:
    """Pay litellm's first-call costs now: the first ``acompletion`` imports a dozen more
    modules (its proxy types, cost and logging helpers) and builds the default tiktoken
    encoding, 0.7-1 s before the first request leaves (more at load), after the user's Enter.
    A made-up streamed call, answered by litellm itself, loads them. Call it in a thread after
    :func:`import_litellm` (the model worker does); True when it ran through."""
    litellm = import_litellm()
    try:
        with _no_logging_threads():
            for _chunk in litellm.completion(**_WARM_UP_CALL):
                pass
    except Exception:  # noqa: BLE001 - a warm-up that fails leaves the first call to pay
        return False
    # What only the asynchronous path imports (httpx's asyncio backend, litellm's service
    # logger), without an event loop of its own here.
    for name in ("anyio._backends._asyncio", "litellm._service_logger"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    return True


@contextlib.contextmanager
def _no_logging_threads() -> Iterator[None]:
    """litellm hands each call's logging to a pool of threads it starts at the first call. A
    worker that forks the warm worker after its warm-up (:mod:`agentsh.llm.warm_worker`) must
    have no thread its copy would lack: while the made-up call runs, what it gives the pool runs
    in the calling thread instead (loading what the first real call's logging would load).
    (Were the pool elsewhere, its threads would start as before, and the warm worker would not
    be made: it checks for threads.)"""
    import sys
    from concurrent.futures import Future

    module = sys.modules.get("litellm.litellm_core_utils.thread_pool_executor")
    pool = getattr(module, "executor", None)
    if pool is None:
        yield
        return

    def inline(work: Callable[..., object], /, *args: object, **kwargs: object) -> Future[object]:
        done: Future[object] = Future()
        try:
            done.set_result(work(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - the future holds it, as the pool's would
            done.set_exception(exc)
        return done

    pool.submit = inline
    try:
        yield
    finally:
        with contextlib.suppress(AttributeError):
            del pool.submit


def litellm_loaded() -> bool:
    return _litellm is not None


def preload(model: str | None = None) -> None:
    """Import litellm (and, given a model, load its tokenizer) ahead of the first call.

    Meant for a worker thread started after the UI's first frame; safe to call repeatedly.
    """
    import_litellm()
    if model:
        from agentsh.llm.tokens import TokenCounter

        TokenCounter(model).warm()
