"""End-to-end tests that drive the real agentsh in tmux."""
