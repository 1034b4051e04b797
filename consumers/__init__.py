"""Thin entry modules, one per role: lineage, assertions, incidents, effects."""
