"""File checkpoints: the project's files, captured at every user message and around every
file-changing tool call, tied to the session tree so moving in the tree can bring them back.

Layout: :mod:`.store` (one SQLite store per project: compressed content-addressed blobs, the
change journal, the stat cache), :mod:`.scan` (which files, read without following links),
:mod:`.capture` (find and journal changes), :mod:`.budget` (oldest-first eviction across all
stores), :mod:`.history` (which files each entry of a session stands for), :mod:`.restore`
(plan and atomic writes) and :mod:`.checkpointer` (the facade the agent, CLI and TUI use).
Nothing here imports Textual or litellm.
"""
