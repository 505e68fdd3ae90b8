"""Screens pushed over the chat: help (F1), pickers (themes, sessions, models)."""
