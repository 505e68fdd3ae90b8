"""A warm ``agentsh memory search``, when the user's ``search.warm_process_s`` is above 0.

A search as a new process spends most of its time importing numpy and onnxruntime and loading
the embedding model. With this setting, the first search starts a background process of the
user's that keeps them loaded (and the project indexes open) until no search came for that
many seconds; later searches ask it over a Unix socket and print its answer.

The server answers only what it can answer exactly as the command would: the local model, an
index that is up to date with every vector computed. Anything else (an index still embedding,
a database error, another embedding setting, a server of another version) is a "fallback",
and the command searches in its own process as without the setting, with the same output.

Safety: the socket is in the user's cache folder (``run/``, mode 0700, checked to be the user's
own and not a link; never a path the project chooses), the socket is 0600, and each side checks
that the other runs as the same user (``SO_PEERCRED``). The server runs with the environment of
the command that started it, and a command only talks to a server started with the same
environment and the same agentsh code (both are in the socket's name).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsh.paths import UserPaths

PROTOCOL = 1
MAX_MESSAGE = 16 * 1024 * 1024
ASK_TIMEOUT_S = 30.0


# -- where ------------------------------------------------------------------------------------


def socket_path(user: UserPaths) -> Path | None:
    """The socket of this user's server for this environment and code; None when its folder is
    not safely the user's own (or the path is too long for a Unix socket)."""
    folder = user.cache_dir / "run"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    path = folder / f"search-{_key()}.sock"
    return path if len(os.fsencode(path)) < 100 else None


def _key() -> str:
    """What the server's answers depend on besides the files: the interpreter, agentsh's code
    and the environment variables that choose folders and settings."""
    digest = hashlib.sha256(f"{PROTOCOL}\0{sys.executable}".encode())
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        with contextlib.suppress(OSError):
            st = path.stat()
            digest.update(f"\0{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    for name in sorted(os.environ):
        if name.startswith(("AGENTSH_", "XDG_")) or name == "HOME":
            digest.update(f"\0{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:20]


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_MESSAGE:
            raise ValueError("message too long")
    return data


# -- the command's side -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    stdout: str
    stderr: str  # the configuration's warnings, as the command prints them


def ask(user: UserPaths, cwd: Path, query: str, k: int | None, as_json: bool) -> Answer | None:
    """The server's output for this search, or None (no server, or a fallback: search here)."""
    path = socket_path(user)
    if path is None or not path.exists():
        return None
    request = {"protocol": PROTOCOL, "cwd": str(cwd), "query": query, "k": k, "json": as_json}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ASK_TIMEOUT_S)
            conn.connect(str(path))
            if _peer_uid(conn) != os.getuid():
                return None
            conn.sendall(json.dumps(request).encode("utf-8") + b"\n")
            reply = json.loads(_read_line(conn))
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
    if path is None or _listening(path):
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "agentsh.commands.search_server", f"{idle_s:g}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not ended with the terminal's process group
            close_fds=True,
            cwd="/",
        )


def _listening(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(1.0)
            conn.connect(str(path))
    except OSError:
        return False
    return True


# -- the server -------------------------------------------------------------------------------


class SearchServer:
    """Answers searches on ``path`` until none came for ``idle_s`` seconds."""

    def __init__(self, path: Path, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.answered = 0
        self._indexes: dict[tuple[Path, Any], Any] = {}

    def serve(self) -> None:
        lock = os.open(
            self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
        )
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # another server has this socket
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                old = os.umask(0o177)
                try:
                    listener.bind(str(self.path))  # created 0600
                finally:
                    os.umask(old)
                listener.listen(8)
                listener.settimeout(self.idle_s)
                try:
                    self._loop(listener)
                finally:
                    with contextlib.suppress(OSError):
                        self.path.unlink()
        finally:
            for index in self._indexes.values():
                index.close()
            os.close(lock)

    def _loop(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _address = listener.accept()
            except TimeoutError:
                return
            with conn:
                try:
                    if _peer_uid(conn) != os.getuid():
                        continue
                    conn.settimeout(ASK_TIMEOUT_S)
                    request = json.loads(_read_line(conn))
                    reply = self.answer(request) if isinstance(request, dict) else _FALLBACK
                    conn.sendall(json.dumps(reply).encode("utf-8") + b"\n")
                except (OSError, ValueError):
                    continue

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
        from agentsh.memory.embeddings import LocalMiniLM, make_embedder
        from agentsh.memory.index import MemoryIndex
        from agentsh.memory.index_db import index_db_path
        from agentsh.memory.query_vectors import remembering

        env = load_environment(cwd)
        settings = env.settings.search
        key = (index_db_path(env.user, env.project), settings)
        index = self._indexes.get(key)
        if index is None:
            embedder = make_embedder(settings)
            if not isinstance(embedder, LocalMiniLM):
                return None
            embedder = remembering(embedder, env.user.cache_dir)
            index = MemoryIndex.open(env.user, env.project, settings, embedder=embedder)
            self._indexes[key] = index
        index.sync()
        if index.vectors.pending() or index.mode()[1]:
            return None  # still embedding, or keyword-only: the command says so itself
        response = index.search(query, max_results=k)
        if as_json:
            stdout = json.dumps(response_json(response), ensure_ascii=False, indent=2) + "\n"
        else:
            stdout = "".join(f"{line}\n" for line in format_response(response))
        return Answer(stdout, problem_lines(env))


_FALLBACK: dict[str, Any] = {"status": "fallback"}


def main(argv: list[str]) -> int:
    """``python -m agentsh.commands.search_server IDLE_S`` (see :func:`start_unless_running`)."""
    try:
        idle_s = float(argv[0])
    except (IndexError, ValueError):
        return 2
    path = socket_path(UserPaths.from_env())
    if path is None or idle_s <= 0:
        return 1
    SearchServer(path, idle_s).serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
