"""``agentsh -p``: the agent without a screen, for scripts, CI and Claude Code tooling.

:mod:`.run` drives one run (or, with ``--input-format stream-json``, one turn per message read),
:mod:`.stdin` decides what piped input means.
"""
