"""Cartograph upstream."""
