"""Memory: curated MEMORY.md / USER.md, the injection guard, typed docs, hybrid search."""
