"""``python -m agentsh`` runs the command line."""

import sys

from agentsh.cli import main

sys.exit(main())
