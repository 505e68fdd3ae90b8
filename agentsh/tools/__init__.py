"""Tools the model can call: files, shell, search, memory; and the approval policy."""
