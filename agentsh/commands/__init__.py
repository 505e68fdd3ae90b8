"""Subcommand bodies (sessions, memory, context); cli.py imports each lazily."""
