"""Cartograph over stdio, beside :mod:`cartograph.server.http`.

``serve`` runs one catalog for one client on stdin/stdout; ``guard`` answers
every request the SDK cannot parse; ``wire`` is the event-loop pipe I/O under
both; ``bridge`` is ``cartograph bridge``, a stdio server forwarding to a
streamable HTTP endpoint.
"""

from cartograph.server.stdio.bridge import run_bridge
from cartograph.server.stdio.serve import serve_stdio

__all__ = ["run_bridge", "serve_stdio"]
