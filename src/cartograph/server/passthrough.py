"""Upstream resources and prompts, passed through one catalog: named, listed, kept current.

Tools reach an agent through ``discover`` and ``call``; resources and prompts
are for the *client* (its resource picker, its slash commands), so they pass
through as themselves, each namespaced so that a federation's servers, and a
client's several catalog entries, cannot collide:

* a resource (or template) ``U`` of server ``S`` in catalog ``C`` is
  ``cartograph://C/S/U`` — the upstream URI kept whole after the server, so a
  template's ``{variables}`` expand as before and the read maps straight back;
* a prompt ``P`` of server ``S`` is ``S/P``, after the catalog's tool prefix
  when its endpoint has one (``ops_S/P``), exactly as its tools are prefixed.

:class:`CatalogContent` keeps each server's latest listing (taken when a
session opens, and again when the upstream says ``resources/list_changed`` or
``prompts/list_changed``) and tells subscribers what changed, so the serving
layer forwards the notification to its clients. Listings are not attested:
capability cards pin tools only (see ``docs/gateway.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final
from urllib.parse import quote, unquote

from cartograph import error_codes as codes
from cartograph.errors import CartographError, PolicyError, SessionLimitError
from cartograph.gateway.pool import Upstream, client_of
from cartograph.server.content_names import canonical_server, canonical_uri
from cartograph.server.refresher import CoalescingRefresher
from cartograph.upstream.content import ContentKind, ContentListing

logger = logging.getLogger(__name__)

RESOURCE_SCHEME: Final = "cartograph"
_URI_PREFIX: Final = f"{RESOURCE_SCHEME}://"
CONTENT_KINDS: Final[tuple[ContentKind, ...]] = ("resources", "prompts")

ChangeListener = Callable[[ContentKind], Awaitable[None]]
"""Told which kind of listing changed (``resources`` or ``prompts``) in a catalog."""

UpdateListener = Callable[[str], Awaitable[None]]
"""Told the client-side URI (``cartograph://C/S/U``) of a resource its upstream says changed."""


def resource_uri(catalog: str, server: str, upstream_uri: str) -> str:
    """The URI a client sees for ``upstream_uri`` (or a template) of ``server`` in ``catalog``."""
    return f"{_URI_PREFIX}{catalog}/{quote(server, safe='')}/{upstream_uri}"


def split_resource_uri(uri: str) -> tuple[str, str, str] | None:
    """``(catalog, server, upstream URI)`` of a URI :func:`resource_uri` made, else None."""
    if not uri.startswith(_URI_PREFIX):
        return None
    catalog, _, rest = uri[len(_URI_PREFIX) :].partition("/")
    server, _, upstream = rest.partition("/")
    if not catalog or not server or not upstream:
        return None
    return catalog, unquote(server), upstream


def canonical_resource_uri(uri: str) -> str:
    """The canonical spelling of a client-side URI (P-URI-1); ``uri`` itself if it has none.

    What a subscription is remembered under, so that the update, which arrives
    under the canonical spelling, finds the client that subscribed in another.
    """
    parts = split_resource_uri(uri)
    if parts is None:
        return uri
    catalog, server, upstream = parts
    try:
        return resource_uri(catalog, canonical_server(server), canonical_uri(upstream))
    except PolicyError:
        return uri


def prompt_name(server: str, name: str, prefix: str | None = None) -> str:
    """The prompt name a client sees (server names never hold ``/``)."""
    return f"{prefix or ''}{server}/{name}"


def split_prompt_name(name: str, prefix: str | None = None) -> tuple[str, str] | None:
    """``(server, upstream prompt name)`` of a name :func:`prompt_name` made, else None."""
    if prefix:
        if not name.startswith(prefix):
            return None
        name = name[len(prefix) :]
    server, sep, prompt = name.partition("/")
    if not sep or not server or not prompt:
        return None
    return server, prompt


def audit_uri(upstream_uri: str) -> str:
    """What the audit names for a read: the URI without query or fragment (values live there)."""
    return upstream_uri.split("#", 1)[0].split("?", 1)[0]


class CatalogContent:
    """Each server's latest resources/templates/prompts listing, and who to tell on change."""

    def __init__(self, catalog: str) -> None:
        self.catalog = catalog
        self.listings: dict[str, ContentListing] = {}
        self._listeners: list[ChangeListener] = []
        self._update_listeners: list[UpdateListener] = []
        self._holders: dict[tuple[str, str], set[str]] = {}
        self._held: dict[str, set[tuple[str, str]]] = {}
        self._relists = CoalescingRefresher()

    def subscribe(self, listener: ChangeListener) -> None:
        """Call ``listener(kind)`` whenever a server's resources or prompts listing changes."""
        self._listeners.append(listener)

    def on_updated(self, listener: UpdateListener) -> None:
        """Call ``listener(uri)`` when an upstream says a (subscribed) resource changed."""
        self._update_listeners.append(listener)

    def hold(self, server: str, uri: str, holder: str, *, limit: int | None = None) -> bool:
        """``holder`` (a pool partition) subscribes to ``uri`` of ``server``; True if it is new.

        Raises :class:`SessionLimitError` (``subscription_limit``) when ``holder``
        already holds ``limit`` other subscriptions: a client cannot make the proxy
        keep any number of upstream subscriptions ([gateway] max_subscriptions_per_session).
        """
        key = (server, uri)
        held = self._held.setdefault(holder, set())
        if key in held:
            return False
        if limit is not None and len(held) >= limit:
            raise SessionLimitError(
                f"this session already holds {len(held)} resource subscriptions in catalog "
                f"{self.catalog!r} ([gateway] max_subscriptions_per_session = {limit}); "
                "unsubscribe from one first",
                code=codes.SUBSCRIPTION_LIMIT,
                setting="max_subscriptions_per_session",
                limit=limit,
            )
        held.add(key)
        self._holders.setdefault(key, set()).add(holder)
        return True

    def release(self, server: str, uri: str, holder: str) -> bool:
        """``holder`` unsubscribed; True when nobody holds ``uri`` any more.

        A stateless upstream's session is shared by every client, so its
        subscription may only end with the last client's unsubscribe.
        """
        held = self._held.get(holder)
        if held is not None:
            held.discard((server, uri))
            if not held:
                del self._held[holder]
        holders = self._holders.get((server, uri), set())
        holders.discard(holder)
        if holders:
            return False
        self._holders.pop((server, uri), None)
        return True

    def release_client(self, client: str) -> list[tuple[str, str, str]]:
        """Drop every subscription of downstream ``client`` (its session ended), under any
        principal; ``(server, uri, holder)`` of each that no other client holds any more."""
        unheld: list[tuple[str, str, str]] = []
        for holder in [h for h in self._held if client_of(h) == client]:
            for server, uri in sorted(self._held.get(holder, ())):
                if self.release(server, uri, holder):
                    unheld.append((server, uri, holder))
        return unheld

    def held_by(self, holder: str) -> int:
        """How many subscriptions ``holder`` holds."""
        return len(self._held.get(holder, ()))

    async def opened(self, server: str, session: Upstream) -> None:
        """A session opened: list once per server, then follow its change notifications.

        Never fails the open: a server whose listing fails still serves its tools.
        """
        follow = getattr(session, "on_resource_updated", None)
        if follow is not None:
            follow(self._updated)
        subscribe = getattr(session, "on_content_changed", None)
        if subscribe is not None:

            async def changed(_server: str, _kind: ContentKind, s: Upstream = session) -> None:
                await self.changed(server, s)

            subscribe(changed)
        if server not in self.listings:
            await self._refresh(server, session)

    async def changed(self, server: str, session: Upstream) -> None:
        """Coalesced like ``tools/list_changed``: one re-list in flight plus one after."""
        await self._relists.trigger(server, lambda: self._refresh(server, session))

    async def _refresh(self, server: str, session: Upstream) -> None:
        if not getattr(session, "offers", None):
            return  # advertises neither resources nor prompts
        try:
            fresh = await session.list_content()
        except CartographError as exc:
            logger.warning("listing resources/prompts of %s failed: %s", server, exc.code)
            return
        old = self.listings.get(server, ContentListing())
        self.listings[server] = fresh
        kinds: list[ContentKind] = []
        if (old.resources, old.templates) != (fresh.resources, fresh.templates):
            kinds.append("resources")
        if old.prompts != fresh.prompts:
            kinds.append("prompts")
        for kind in kinds:
            await self._tell(kind)

    async def _updated(self, server: str, uri: str) -> None:
        namespaced = canonical_resource_uri(resource_uri(self.catalog, server, uri))
        for listener in list(self._update_listeners):
            try:
                await listener(namespaced)
            except Exception:  # one client's notification must not stop the others
                logger.exception("catalog %s: forwarding resources/updated failed", self.catalog)

    async def _tell(self, kind: ContentKind) -> None:
        for listener in list(self._listeners):
            try:
                await listener(kind)
            except Exception:  # one client's notification must not stop the others
                logger.exception(
                    "catalog %s: forwarding %s list_changed failed", self.catalog, kind
                )
