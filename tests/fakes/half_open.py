"""A TCP proxy that can go half-open: it keeps accepting connections and reading what comes,
and answers nothing (a server whose process hangs, a network that drops one direction).

``HalfOpenProxy(port).start()`` forwards 127.0.0.1:``proxy.port`` to ``port`` both ways until
``frozen`` is set; from then on, bytes on every connection (old and new) are read and dropped.
Clearing ``frozen`` forwards again (what was dropped stays lost, so an old connection stays
broken: a client must connect again).
"""

from __future__ import annotations

import contextlib
import socket
import threading


class HalfOpenProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frozen = False
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False

    def start(self) -> HalfOpenProxy:
        threading.Thread(target=self._accept, name="half-open-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        self._closed = True
        for sock in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _address = self._listener.accept()
            except OSError:
                return
            self._sockets.append(client)
            if self.frozen:  # accepted, read, never answered
                threading.Thread(target=self._drain, args=(client,), daemon=True).start()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _drain(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while sock.recv(65536):
                pass

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if not self.frozen:
                    sink.sendall(data)
        if not self.frozen:  # an end is passed on, as a network would (frozen: it is lost)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
