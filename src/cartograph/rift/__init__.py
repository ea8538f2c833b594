"""Cartograph rift."""
