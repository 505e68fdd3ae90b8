"""TUI tests: Pilot, snapshots, start-up import budget."""
