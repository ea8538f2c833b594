"""Fixtures for the HTTP surface: servers on free loopback ports."""

from __future__ import annotations
