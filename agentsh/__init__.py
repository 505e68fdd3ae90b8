"""agentsh: a terminal coding-agent shell."""

__version__ = "0.1.0"
