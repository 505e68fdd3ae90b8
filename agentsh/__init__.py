"""agentsh: a terminal coding-agent shell."""
