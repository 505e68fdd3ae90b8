"""The Textual front end: it renders agent events and the session path, and sends intents."""
