"""The session log: typed entries, the append-only file, the tree, and the catalog."""
