"""Run ``agentsh`` (:func:`agentsh.cli.main`) inside the test process, as a process would run.

An ``agentsh -p`` subprocess costs seconds of CPU that no test is about: a Python start, the
import of agentsh, and a model worker of its own importing litellm (3-5 s). The tests that are
about what ``-p`` prints, records and sends run the same command line here instead: file
descriptors 0-2 and ``sys.std*`` are pipes and files exactly as a shell gives them, the
environment is the test's own, and the model calls go through the model worker as in the
command (one worker per test process, started once, reused: its environment is sent along
with each call). The tests about the process itself (signals, a real stdin, exit on its own,
``python -m agentsh``) run the command as a process.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str


def run_cli(argv: Sequence[str], *, input: str = "") -> Finished:
    """``agentsh ARGV`` with ``input`` piped in (then closed) and stdout/stderr captured as text
    (decoded as ``subprocess.run(text=True)`` does: UTF-8, universal newlines)."""
    from agentsh.cli import main
    from agentsh.llm import remote

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with _stdio(input.encode(), out.fileno(), err.fileno()):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's usage errors end this way
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                # The command's process would end here; the next command starts in-process
                # again until it switches to the worker itself.
                remote._in_use = False
        out.seek(0)
        err.seek(0)
        return Finished(code, _text(out.read()), _text(err.read()))


def _text(data: bytes) -> str:
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _stdio(data: bytes, out_fd: int, err_fd: int) -> Iterator[None]:
    """Descriptors 0, 1, 2 and ``sys.stdin/stdout/stderr`` as a process started with a pipe
    for stdin and files for stdout and stderr has them; both restored afterwards."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=_feed, args=(write_end, data), daemon=True)
    try:
        os.dup2(read_end, 0)
        os.close(read_end)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        # What Python sets up for a process whose stdio are not terminals.
        sys.stdin = _text_stream(0, "rb")
        sys.stdout = _text_stream(1, "wb")
        sys.stderr = _text_stream(2, "wb", errors="backslashreplace", line_buffering=True)
        writer.start()
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)  # also closes our end of the stdin pipe: a blocked feed ends
            os.close(saved)
        if writer.ident is not None:
            writer.join(timeout=10)


def _text_stream(fd: int, mode: str, **options: Any) -> io.TextIOWrapper:
    raw = open(fd, mode, closefd=False)  # noqa: SIM115 - as long as the command's stdio
    return io.TextIOWrapper(raw, encoding="utf-8", **options)


def _feed(fd: int, data: bytes) -> None:
    """Write ``data`` to the command's stdin and close it, as ``subprocess.run(input=...)``."""
    with contextlib.suppress(OSError), open(fd, "wb") as pipe:
        pipe.write(data)
