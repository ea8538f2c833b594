"""What the tests share, and never a test itself.

The fake upstream MCP servers the tests run as subprocesses (``scriptable``,
``content``, ``asking``, ``oauth_upstream``), the receivers and stores they
talk to (``otlp``, ``postgres``, the ``fleet``), and the helpers that write a
config for them and serve it (``support``, ``serving``, ``events``). Tests import
from here, never from ``conftest`` or from another test module.
"""
