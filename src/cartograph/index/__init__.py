"""Tool retrieval: embedders, the cached tool index, rankers and ``discover``.

The contract: the index is built from verified card text only
(:class:`ToolIndex`), an :class:`Embedder` turns texts into L2-normalised
rows, and :func:`discover` answers a task with a :class:`DiscoverResult`.
"""

from cartograph.index.discover import DiscoverResult, discover
from cartograph.index.embedders import get_embedder
from cartograph.index.embedders.base import Embedder
from cartograph.index.tool_index import ToolIndex

__all__ = ["DiscoverResult", "Embedder", "ToolIndex", "discover", "get_embedder"]
