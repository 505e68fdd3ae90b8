"""Side panes (memory, summaries, tree): arriving with the panes issue."""
