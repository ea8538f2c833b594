"""Cartograph cli."""
