"""The warm ``agentsh memory search``: a background process of the user's that keeps the
embedding model loaded (and the project indexes open) for ``search.warm_process_s`` seconds
(default 300; 0: off) after the last search.

A search as a new process spends most of its time importing numpy and onnxruntime, loading the
embedding model and checking the folder. The first search does that in its own process and then
starts this one; later searches ask it over a Unix socket before loading anything of their own
(:func:`ask`, called by ``cli.main`` ahead of the trust check and the memory modules) and print
its answer.

The server answers only what it can answer exactly as the command would: the local model, an
index that is up to date with every vector computed, the folder's trust and configuration
checked again for each search as the command checks them. Anything else (an index still
embedding, a database error, another embedding setting, the user's config now saying 0) is a
"fallback", and the command searches in its own process, with the same output.

Safety: the socket is in the user's runtime folder (``$XDG_RUNTIME_DIR/agentsh``, else ``run/``
in the user's cache folder; mode 0700, checked to be the user's own and not a link; never a
path a project chooses) and is 0600, and each side checks that the other runs as the same user
(``SO_PEERCRED``). Only the user's own config and environment decide whether it runs
(``search.warm_process_s``, ``AGENTSH_NO_WARM_SEARCH=1``): a project's config cannot turn it on,
off or elsewhere. The server runs with the environment of the command that started it and the
same agentsh code; a command only talks to a server started with the same interpreter, agentsh
folder and environment (all in the socket's name), and a server whose code changed on disk ends
at the next search (:class:`~agentsh.user_socket.CodeWatch`). It keeps nothing a project gave
it but that project's own index, and at most :data:`MAX_INDEXES` of them. Where the socket is
and who may use it: :mod:`agentsh.user_socket`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentsh.commands import register_trust_sources
from agentsh.user_socket import (
    PACKAGE,
    CodeWatch,
    bound,
    listening,
    peer_uid,
    read_line,
    runtime_folder,
    socket_in,
)

if TYPE_CHECKING:
    from agentsh.paths import UserPaths

PROTOCOL = 1
ASK_TIMEOUT_S = 30.0
MAX_INDEXES = 8  # projects whose index stays open; the least recently searched is closed
OFF_VARIABLE = "AGENTSH_NO_WARM_SEARCH"  # =1: never ask or start the process (tests, scripts)


# -- where ------------------------------------------------------------------------------------


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when the user's environment turns the warm process off (``AGENTSH_NO_WARM_SEARCH``)."""
    value = (os.environ if environ is None else environ).get(OFF_VARIABLE, "")
    return value in ("", "0")


def socket_path(user: UserPaths | None = None) -> Path | None:
    """The socket of this user's server for this environment and code; None when its folder is
    not safely the user's own (or the path is too long for a Unix socket). ``user``: the
    user's folders, found from the environment when not given."""
    return socket_in(runtime_folder(user), f"search-{_key()}.sock")


def _key() -> str:
    """What the server's answers depend on besides the files and its code: the interpreter,
    where agentsh is, and the environment variables that choose folders and settings. (A
    change to the code it runs ends it: :class:`~agentsh.user_socket.CodeWatch`.)"""
    digest = hashlib.sha256(f"{PROTOCOL}\0{sys.executable}\0{_PACKAGE}".encode())
    for name in sorted(os.environ):
        if (name.startswith(("AGENTSH_", "XDG_")) or name == "HOME") and name != OFF_VARIABLE:
            digest.update(f"\0{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:20]


_PACKAGE = PACKAGE


# -- the command's side -----------------------------------------------------------------------


class Answer(NamedTuple):
    stdout: str
    stderr: str  # the configuration's warnings, as the command prints them


def ask(cwd: Path, query: str, k: int | None, as_json: bool) -> Answer | None:
    """The server's output for this search, or None (no server, or a fallback: search here).

    Asked whenever one listens: whether the user still wants it (their config) is the server's
    to check, so the command reads no config before asking."""
    if not enabled():
        return None
    path = socket_path()
    if path is None or not path.exists():
        return None
    request = {"protocol": PROTOCOL, "cwd": str(cwd), "query": query, "k": k, "json": as_json}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ASK_TIMEOUT_S)
            conn.connect(str(path))
            if peer_uid(conn) != os.getuid():
                return None
            conn.sendall(json.dumps(request).encode("utf-8") + b"\n")
            reply = json.loads(read_line(conn))
    except (OSError, ValueError):
        return None
    if not isinstance(reply, dict) or reply.get("status") != "ok":
        return None
    stdout, stderr = reply.get("stdout"), reply.get("stderr")
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        return None
    return Answer(stdout, stderr)


def start_unless_running(user: UserPaths, idle_s: float) -> None:
    """Start the server in the background unless one listens (a second one started meanwhile
    exits at once: the first holds the lock; a socket left by a killed one is replaced)."""
    path = socket_path(user)
    if idle_s <= 0 or not enabled() or path is None or listening(path):
        return
    import subprocess

    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "agentsh.commands.search_server", f"{idle_s:g}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not ended with the terminal's process group
            close_fds=True,
            # ``-m`` puts its folder first on sys.path: the folder that holds this very agentsh
            # (never the project's), so the server runs the code the command runs.
            cwd=_PACKAGE.parent,
        )


# -- the server -------------------------------------------------------------------------------


class SearchServer:
    """Answers searches on ``path`` until none came for ``idle_s`` seconds (the user's
    ``search.warm_process_s``, read again with each search: 0 ends it)."""

    def __init__(self, path: Path, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.answered = 0
        self._stop = False
        self._indexes: dict[tuple[Path, Any], Any] = {}  # least recently searched first
        self._models: dict[int, Any] = {}  # by batch size: one model for every index
        self._code = CodeWatch((_PACKAGE,))

    def serve(self) -> None:
        try:
            with bound(self.path) as listener:
                if listener is None:
                    return  # another server has this socket
                self.warm_up()  # a search asked meanwhile waits for it, not for a new process
                self._loop(listener)
        finally:
            for index in self._indexes.values():
                _close(index)

    def _loop(self, listener: socket.socket) -> None:
        while not self._stop:
            listener.settimeout(self.idle_s)
            try:
                conn, _address = listener.accept()
            except TimeoutError:
                return
            with conn:
                try:
                    if peer_uid(conn) != os.getuid():
                        continue
                    conn.settimeout(ASK_TIMEOUT_S)
                    request = json.loads(read_line(conn))
                    reply = self.answer(request) if isinstance(request, dict) else _FALLBACK
                    conn.sendall(json.dumps(reply).encode("utf-8") + b"\n")
                except (OSError, ValueError):
                    continue

    def warm_up(self) -> None:
        """Load the model for queries now (it is not loaded for nothing: a search just ran)."""
        from agentsh.config import SearchSettings

        with contextlib.suppress(Exception):  # the search that needs it meets the failure
            self._model(SearchSettings()).load(quick=True)
        self._code.note()

    def _model(self, settings: Any) -> Any:
        from agentsh.memory.embeddings import LocalMiniLM, make_embedder

        model = self._models.get(settings.embedding_batch)
        if model is None:
            model = make_embedder(settings, resident=True)
            if not isinstance(model, LocalMiniLM):
                return None
            self._models[settings.embedding_batch] = model
        return model

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """What the command would print for ``request``, or a fallback."""
        if request.get("protocol") != PROTOCOL:
            return _FALLBACK
        try:
            output = self._search(
                Path(str(request["cwd"])),
                str(request["query"]),
                request.get("k") if isinstance(request.get("k"), int) else None,
                bool(request.get("json")),
            )
        except Exception:  # noqa: BLE001 - whatever it is, the command searches itself
            return _FALLBACK
        if output is None:
            return _FALLBACK
        self.answered += 1
        return {"status": "ok", "stdout": output.stdout, "stderr": output.stderr}

    def _search(self, cwd: Path, query: str, k: int | None, as_json: bool) -> Answer | None:
        from agentsh.commands.memory_search_cmd import format_response, problem_lines, response_json
        from agentsh.config import load_environment
        from agentsh.memory.index import MemoryIndex
        from agentsh.memory.index_db import index_db_path
        from agentsh.memory.query_vectors import remembering

        if self._code.changed():  # agentsh was upgraded or edited since: end now
            self._stop = True
            return None
        if not cwd.is_absolute():
            return None
        env = load_environment(cwd)  # the folder's trust and config, as the command checks them
        settings = env.settings.search
        if settings.warm_process_s <= 0:  # the user turned it off since: end now
            self._stop = True
            return None
        self.idle_s = settings.warm_process_s
        key = (index_db_path(env.user, env.project), settings)
        index = self._indexes.pop(key, None)
        if index is None:
            model = self._model(settings)
            if model is None:
                return None  # another embedding model: the command searches itself
            embedder = remembering(model, env.user.cache_dir)
            index = MemoryIndex.open(env.user, env.project, settings, embedder=embedder)
            while len(self._indexes) >= MAX_INDEXES:
                _close(self._indexes.pop(next(iter(self._indexes))))
        self._indexes[key] = index
        index.sync()
        if index.vectors.pending() or index.mode()[1]:
            return None  # still embedding, or keyword-only: the command says so itself
        response = index.search(query, max_results=k)
        if as_json:
            stdout = json.dumps(response_json(response), ensure_ascii=False, indent=2) + "\n"
        else:
            stdout = "".join(f"{line}\n" for line in format_response(response))
        self._code.note()
        return Answer(stdout, problem_lines(env))


def _close(index: Any) -> None:
    from agentsh.memory.query_vectors import RememberingEmbedder

    index.close()
    if isinstance(index.embedder, RememberingEmbedder):
        index.embedder.close()


_FALLBACK: dict[str, Any] = {"status": "fallback"}


def main(argv: list[str]) -> int:
    """``python -m agentsh.commands.search_server IDLE_S`` (see :func:`start_unless_running`)."""
    try:
        idle_s = float(argv[0])
    except (IndexError, ValueError):
        return 2
    path = socket_path()
    if path is None or idle_s <= 0 or not enabled():
        return 1
    # The folder's trust is checked as the command checks it: with the files it covers that
    # cli.main adds (a project's MCP servers, its repository's hooks and settings).
    register_trust_sources()
    from agentsh.trust import remember_memory_digests

    # It checks the same folders again and again: a memory file is hashed again only once it
    # changed (agentsh.trust._DigestMemo), ~0.1 s of every search over 230 notes otherwise.
    remember_memory_digests()
    SearchServer(path, idle_s).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
