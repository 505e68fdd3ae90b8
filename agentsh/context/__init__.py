"""Context management: accounting, tiers, the compaction pipeline, engines (SPEC §4)."""
