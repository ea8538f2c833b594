"""Tool transforms as the operator writes them: a served name, narrower arguments, hidden ones.

The same two models are read from two places: a server's ``[servers.NAME.tools.TOOL]``
tables in ``cartograph.toml`` and the ``[servers."NAME".tools.TOOL]`` tables of the
``[cards] overrides`` file (which adds the card's other text fields). ``cartograph
bootstrap`` turns them into the signed card (``cards/transforms.py``), so the served
shape is what the operator vouches for; nothing here is applied to a call directly::

    [servers.billing.tools.create_invoice]
    name = "invoice"                          # the tool's name as served
    title = "Create an invoice"
    description = "Bill the current customer."

    [servers.billing.tools.create_invoice.args.account_id]
    env = "BILLING_ACCOUNT"                   # hidden: filled from the proxy's environment

    [servers.billing.tools.create_invoice.args.currency]
    enum = ["EUR", "USD"]                     # narrower than the upstream's schema

    [servers.billing.tools.create_invoice.args.amount_cents]
    name = "amount"
    maximum = 100000

    [servers.git-extra.tools.git_status]
    vouch_name = true                         # its name is also another server's: trust it

``vouch_name`` is the operator's word that a tool's name is its own although
another server's tool has the same (or a look-alike) name; without it such a
tool with nothing on its card but its name ranks without its name
(:mod:`cartograph.index.name_copies`).

Shape problems here (both ``value`` and ``env``, a hidden argument given a served
name) are refused by pydantic, so at load (``config_invalid``, ``overrides_invalid``);
problems that need the upstream's definition (an argument it does not take, an enum
value its schema refuses) are refused at bootstrap with ``transform_*`` codes.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

TOOL_NAME_PATTERN: Final = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
"""A served tool or argument name: what MCP clients accept everywhere (no spaces, no slash)."""
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"

Scalar = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class ArgumentTransform(_Strict):
    """One upstream argument as served: renamed, re-described, narrowed, or hidden.

    ``hide``, ``value`` or ``env`` hides it: the agent neither sees nor may set
    it. ``value`` is sent as is on every call; ``env`` names the variable the
    proxy reads it from at call time (an account id the agent must not choose);
    with neither, it is never sent (only for an argument the upstream does not
    require).
    """

    name: str | None = Field(default=None, pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    hide: bool = False
    value: JsonValue | None = None
    env: str | None = Field(default=None, pattern=ENV_NAME_PATTERN)
    enum: tuple[Scalar, ...] | None = Field(default=None, min_length=1)
    minimum: int | float | None = Field(default=None, allow_inf_nan=False)
    maximum: int | float | None = Field(default=None, allow_inf_nan=False)

    @property
    def hidden(self) -> bool:
        return self.hide or self.value is not None or self.env is not None

    @property
    def narrowed(self) -> bool:
        return self.enum is not None or self.minimum is not None or self.maximum is not None

    @model_validator(mode="after")
    def _one_meaning(self) -> ArgumentTransform:
        if self.value is not None and self.env is not None:
            raise ValueError("set `value` (fixed) or `env` (from the environment), not both")
        if self.hidden and (self.name or self.description is not None or self.narrowed):
            raise ValueError(
                "a hidden argument is never shown: it takes no name, description, "
                "enum, minimum or maximum"
            )
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise ValueError("`minimum` is above `maximum`")
        return self


class ToolTransform(_Strict):
    """One upstream tool as served: its name, title, description and arguments."""

    name: str | None = Field(default=None, pattern=TOOL_NAME_PATTERN)
    title: str | None = None
    description: str | None = None
    args: dict[str, ArgumentTransform] = Field(default_factory=dict)
    vouch_name: bool | None = None

    @property
    def reshapes(self) -> bool:
        """Whether the served tool differs from the upstream's in more than its text."""
        return self.name is not None or self.title is not None or bool(self.args)


__all__ = ["ArgumentTransform", "ToolTransform"]
