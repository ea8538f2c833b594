"""Retrieval evaluation: metrics with bootstrap intervals over catalog + queries.

The contract: :func:`evaluate` ranks every query with every ranker over one
or more indexes and returns an :class:`EvalReport`.
"""

from cartograph.eval.harness import EvalReport, evaluate

__all__ = ["EvalReport", "evaluate"]
