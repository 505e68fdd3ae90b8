"""agentsh's command line with a tool whose worker thread never comes back.

``python -c DRIVER ARGS...`` runs ``agentsh ARGS...`` with ls's worker (run in a thread the tool
waits for; grep and find leave theirs behind when stopped) replaced by one that blocks in
``open()`` of a FIFO nobody ever opens for writing, as a hung network mount or a library's
socket read would. It writes ``blocked`` on stderr once the thread is in its ``open()``.
"""

DRIVER = """
import os, sys
import agentsh.tools.search as search
fifo = os.path.abspath("never.fifo")
os.mkfifo(fifo)
def blocked(*_args, **_kwargs):
    print("blocked", file=sys.stderr, flush=True)
    open(fifo, "rb").read()
search._list = blocked
from agentsh.cli import main
sys.exit(main())
"""
