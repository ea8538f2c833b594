"""Cartograph eval."""
