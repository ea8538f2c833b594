"""Cartograph stubs."""
