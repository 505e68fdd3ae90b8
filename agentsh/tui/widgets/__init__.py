"""Widgets of the chat screen: transcript, messages, tool blocks, editor, status bar."""
