"""Slash commands: one table of command objects (:mod:`.registry`), their handlers grouped by
what they act on, and the context a handler receives (:mod:`.command`)."""
