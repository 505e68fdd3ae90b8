"""Pytest fixtures for the fakes (the scripted OpenAI-compatible server lands here)."""
