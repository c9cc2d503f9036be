"""Memory's own speed: search, the read path, the gate, consolidation, embedders, and the
bulk seeding they share."""
