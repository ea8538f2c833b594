"""Cartograph gateway."""
