"""One catalog, live: the runtime room.

:class:`~cartograph.server.runtime.catalog.CatalogRuntime` (``catalog.py``) is
what a mount serves: it holds the pieces that live here, each in its own file:

- ``drift_tracker``: every listed tool's standing against its card;
- ``serving_index``: the index ``discover`` searches, rebuilt in the background;
- ``content_passthrough``: resources and prompts through the gateway;
- ``maintenance``: the background re-list and idle sweep (pooled mode);
- ``catalog_status``: the operator's ``status`` report, built from the runtime's facts.
"""

from cartograph.server.runtime.catalog import CatalogRuntime

__all__ = ["CatalogRuntime"]
