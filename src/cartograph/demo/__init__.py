"""``cartograph demo``: the main job on the bundled demo federation, end to end.

:func:`cartograph.demo.runner.run_demo` runs :data:`cartograph.demo.steps.DEMO_STEPS`
(connect, operator key, bootstrap, verify, agent); :mod:`cartograph.demo.agent`
drives ``cartograph serve`` with the SDK client exactly as an MCP host would.
"""

from cartograph.demo.runner import run_demo
from cartograph.demo.steps import FederationView

__all__ = ["FederationView", "run_demo"]
