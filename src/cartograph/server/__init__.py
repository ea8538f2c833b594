"""Cartograph server."""
