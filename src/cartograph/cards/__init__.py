"""Cartograph cards."""
