"""The federation as data: servers and the tool definitions they serve.

A :class:`Catalog` is what a live federation's ``tools/list`` calls produce and
what a ``catalog.json`` snapshot holds. Everything downstream (cards, index,
Rift, eval, stubs) consumes this shape, so a snapshot can stand in for live
servers anywhere.
"""

from cartograph.catalog.model import Catalog, ServerDef, ToolDef
from cartograph.catalog.snapshot import load_catalog, save_catalog

__all__ = ["Catalog", "ServerDef", "ToolDef", "load_catalog", "save_catalog"]
