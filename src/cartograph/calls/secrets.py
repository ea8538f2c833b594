"""The secret scan's two steps of a call, and the one refusal they share with resources/prompts.

``scan_arguments`` runs after ``validate`` and before ``forward``: arguments that
carry a secret are refused (``secret_in_arguments``) before any upstream I/O, or,
under ``arguments = "audit"``, sent and recorded. ``redact_secrets`` runs on what
came back, before ``limit`` cuts it (a cut must not leave half a key behind): each
secret is replaced by a marker naming its class, or, under ``results = "audit"``,
left and recorded. Either way the call's audit record names the classes seen
(``Call.secrets``), never a value. What counts as a secret:
:mod:`cartograph.gateway.secret_scan`; the policy: ``config/secret_policy.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cartograph import error_codes as codes
from cartograph.calls.request import Call
from cartograph.config.model import CatalogPolicy
from cartograph.errors import PolicyError
from cartograph.gateway.audit import Redactor
from cartograph.gateway.secret_scan import SecretScan


class _Site(Protocol):
    """What the steps read of a call site (``pipeline.CallSite`` is one)."""

    @property
    def catalog(self) -> str: ...
    @property
    def policy(self) -> CatalogPolicy: ...
    @property
    def runtime(self) -> _Runtime: ...


class _Runtime(Protocol):
    @property
    def redactor(self) -> Redactor: ...


async def scan_arguments(site: _Site, call: Call) -> None:
    """Refuse (or, under ``audit``, record) arguments that carry a secret."""
    target = call.resolved
    kinds = SecretScan.of(site.runtime.redactor).kinds(target.arguments)
    if kinds:
        call.secrets["arguments"] = kinds
        refuse_secrets(
            site.catalog, site.policy, kinds, f"{target.server}/{target.tool}", target.server
        )


async def redact_secrets(site: _Site, call: Call) -> None:
    """Redact (or, under ``audit``, record) the secrets in the upstream's result."""
    assert call.result is not None  # forward set it
    redact = site.policy.secrets.results == "redact"
    scan = SecretScan.of(site.runtime.redactor)
    call.result, kinds = scan.call_result(call.result, redact=redact)
    if kinds:
        call.secrets["result"] = kinds


def refuse_secrets(
    catalog: str, policy: CatalogPolicy, kinds: Sequence[str], what: str, server: str
) -> None:
    """Raise ``secret_in_arguments`` for ``kinds`` found in the arguments of ``what``.

    Does nothing under ``arguments = "audit"``. The refusal names the classes, never
    a value, and says how to pass such values on purpose.
    """
    if not kinds or policy.secrets.arguments != "block":
        return
    raise PolicyError(
        f"the arguments of {what} carry a secret ({', '.join(kinds)}), so they were not sent. "
        "Leave the secret out (the upstream holds its own credentials); a catalog whose "
        f'tools must take such values sets catalogs[name="{catalog}"].policy.secrets.'
        'arguments = "audit"',
        code=codes.SECRET_IN_ARGUMENTS,
        server=server,
        secrets=list(kinds),
    )
