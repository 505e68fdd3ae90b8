"""``python -m agentsh`` runs the command line.

``-m`` puts the current folder first on ``sys.path``: in a cloned repository its ``json.py``
or ``litellm.py`` would be imported in place of the real one and run, so the folder is taken
off the path before anything else is imported (the installed ``agentsh`` command never had
it). Python has imported the ``agentsh`` package by then: a folder holding its own
``agentsh/`` wins that import, which only ``python -P -m agentsh`` avoids.
"""

import os
import sys

if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.curdir):
    del sys.path[0]

from agentsh.cli import main

sys.exit(main())
