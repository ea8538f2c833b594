"""Cartograph: a federated MCP proxy that turns tool discovery into ranking."""

__version__ = "0.1.0"
