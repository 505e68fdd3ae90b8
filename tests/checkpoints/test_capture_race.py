"""A capture racing a process that swaps the project's files and folders for links to secrets:
no byte of a secret may ever reach the store, however the swaps fall between the scan's
``lstat``, its folder check and the read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agentsh.checkpoints import scan
from agentsh.checkpoints.checkpointer import Checkpointer
from agentsh.checkpoints.store import CheckpointStore
from tests.checkpoints.conftest import git, write_files

FILES = 120
SECRET = b"SECRET-KEY-MATERIAL"

# file -> link -> file, and folder -> link -> folder, as fast as rename(2) goes: each path is
# for a moment the project's own, for a moment a link to the secret, then the project's again.
SWAPPER = """
import os, sys
os.chdir(sys.argv[1])
open("started", "w").close()
while not os.path.exists("stop"):
    os.rename("keys", "keys.real")
    os.rename("keys.link", "keys")
    os.rename("app.py", "app.file")
    os.rename("app.link", "app.py")
    os.rename("keys", "keys.link")
    os.rename("keys.real", "keys")
    os.rename("app.py", "app.link")
    os.rename("app.file", "app.py")
"""


def _stored(store: CheckpointStore) -> list[bytes]:
    refs = [row[0] for row in store._db.execute("SELECT hash FROM blobs").fetchall()]
    blobs = [store.get_blob(ref) for ref in refs]
    return [b for b in blobs if b is not None]


def test_no_byte_of_a_secret_is_stored_while_files_and_folders_swap_for_links(
    repo: Path, make_checkpointer: Callable[..., Checkpointer], tmp_path: Path
) -> None:
    secrets = tmp_path / "ssh"
    secrets.mkdir()
    for i in range(FILES):
        (secrets / f"k{i:03}").write_bytes(SECRET + b" %03d\n" % i)
    (secrets / "app.py").write_bytes(SECRET + b" app\n")
    # The project's own files of the same names, tracked; the links sit beside them, untracked.
    write_files(repo, {f"keys/k{i:03}": f"public {i}\n" for i in range(FILES)})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "keys")
    (repo / "keys.link").symlink_to(secrets, target_is_directory=True)
    (repo / "app.link").symlink_to(secrets / "app.py")
    checkpointer = make_checkpointer(repo)
    assert checkpointer.capture() is not None  # the baseline, before the swapping starts
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(repo)])
    try:
        deadline = time.monotonic() + 30
        while not (repo / "started").exists():
            assert time.monotonic() < deadline and swapper.poll() is None
            time.sleep(0.01)
        captures = 0
        # Enough captures for the swaps to fall everywhere (each capture reads ~60 files that
        # changed inode since the last one), bounded in time on a loaded machine.
        end = time.monotonic() + 10
        while (captures < 80 and time.monotonic() < end) or captures < 5:
            checkpointer.capture()
            captures += 1
        assert swapper.poll() is None, "the swapper stopped early"
    finally:
        (repo / "stop").touch()
        swapper.wait(10)
    store = checkpointer.recorder.store
    leaked = [b for b in _stored(store) if SECRET in b]
    assert leaked == [], f"{len(leaked)} stored blobs hold a secret after {captures} captures"
    # The captures did see the project's own files (the test drove real reads).
    assert any(b.startswith(b"public ") for b in _stored(store))


def test_a_folder_swapped_link_folder_link_between_scan_and_read_is_not_read_through(
    repo: Path, tmp_path: Path
) -> None:
    # The three swaps, one at a time: the scan's lstat of src/lib.py went through src -> ~/.ssh
    # (so it saw the key's inode), src/ was a real folder again when the scan checked the
    # folders, and a link again when the content was read: the inode matches what the scan saw.
    ssh = tmp_path / "ssh"
    ssh.mkdir()
    (ssh / "lib.py").write_bytes(SECRET)
    real = repo / "src.real"
    (repo / "src").rename(real)
    (repo / "src").symlink_to(ssh, target_is_directory=True)
    st = os.lstat(repo / "src" / "lib.py")  # the scan, through the link
    (repo / "src").unlink()
    real.rename(repo / "src")
    assert scan.RealFolders(repo).holds("src/lib.py")  # the folder check: a real folder
    shutil.move(repo / "src", real)
    (repo / "src").symlink_to(ssh, target_is_directory=True)  # and the read
    assert scan.read_content(repo, "src/lib.py", st, 1 << 20) is None
    # A link read the same way gives its own target text only if it is the link scanned.
    (ssh / "link").symlink_to("/etc/passwd")
    assert scan.read_content(repo, "src/link", os.lstat(repo / "src" / "link"), 1 << 20) is None
