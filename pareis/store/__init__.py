"""Stores: one port per noun, each with an in-memory and a Redis implementation passing one contract suite."""
