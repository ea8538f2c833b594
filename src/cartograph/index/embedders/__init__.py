"""Embedders: the shipped MiniLM model and a deterministic fake for tests."""
