"""Cartograph index."""
