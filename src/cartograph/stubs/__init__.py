"""Typed Python stubs generated from verified cards, for agents that act through code.

Cartograph decides which tool descriptions surface and records their
provenance; code runs them. :func:`generate_stubs` turns verified cards into
a package with one module per upstream server and one function per tool;
the functions call :mod:`cartograph.stubs.runtime`, which talks to a running
`cartograph serve` through its `call` tool.
"""

from cartograph.stubs.generate import DEFAULT_PACKAGE, StubPackage, generate_stubs, write_stubs
from cartograph.stubs.render import Skipped

__all__ = ["DEFAULT_PACKAGE", "Skipped", "StubPackage", "generate_stubs", "write_stubs"]
