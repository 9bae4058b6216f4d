"""The kernel DSLs kbaseline generates for: one module per DSL (tools/dsls/<name>.py), found by tools.registry."""
