"""One catalog, live: verified cards, each tool's drift state, the index, and the gateway.

:class:`CatalogRuntime` is what the proxy's three tools run against. It
never serves anything a verified card does not cover: ``discover`` searches
an index built only from ``ok`` tools, and a ``call`` re-checks the card's
integrity, the tool's drift state and the arguments against it
(:mod:`cartograph.calls.pipeline`) before the gateway does any upstream
I/O. Whenever a session (re)opens, an upstream reports
``tools/list_changed``, or the re-list interval passes (``[gateway]
relist_interval``: the one path that needs no cooperation from the upstream,
whatever its protocol era), the server's tools are re-listed and re-compared
with the card into the catalog's one :class:`~cartograph.cards.drift.DriftView`.
``discover`` filters its results through that view at query time, so a tool
found changed is hidden at once, while the index is rebuilt in the background.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio

from cartograph import error_codes as codes
from cartograph.calls.arguments import SchemaValidators
from cartograph.calls.pipeline import admit_upstream
from cartograph.cards.drift import DriftReport, DriftView, check_drift, check_server_drift
from cartograph.cards.verified import VerifiedCards
from cartograph.catalog.model import ServerDef
from cartograph.config.model import CatalogPolicy, Config, ServerConfig, deny_disabled_tools
from cartograph.errors import (
    CartographError,
    NameCollisionError,
    UpstreamError,
    UsageLogError,
)
from cartograph.gateway.audit import AuditSink, Redactor
from cartograph.gateway.gateway import Gateway
from cartograph.gateway.pool import Opener, Upstream, default_opener
from cartograph.index.embedders.base import Embedder
from cartograph.index.serving import (
    build_serving_index,
    excluded_tools,
    serving_cache,
    warm_up,
)
from cartograph.server import metrics
from cartograph.server.input_forwarding import answering, input_gate
from cartograph.server.offload import run_cpu
from cartograph.server.passthrough import CatalogContent
from cartograph.server.runtime.catalog_status import CatalogFacts, catalog_status
from cartograph.server.runtime.content_passthrough import ContentPassthrough
from cartograph.server.runtime.drift_tracker import DriftTracker
from cartograph.server.runtime.maintenance import Maintenance
from cartograph.server.runtime.serving_index import ServingIndex, ToolKey
from cartograph.storage import open_audit, open_usage_store

if TYPE_CHECKING:
    from cartograph.index.cache import EmbeddingCache
    from cartograph.index.discover import DiscoverResult
    from cartograph.index.tool_index import ToolIndex
    from cartograph.learning.catalog import CatalogLearning

logger = logging.getLogger(__name__)


class CatalogRuntime:
    """A catalog's cards, drift state, index and gateway (see module docstring)."""

    def __init__(
        self,
        config: Config,
        servers: Sequence[ServerConfig],
        cards: VerifiedCards,
        embedder: Embedder,
        *,
        name: str = "default",
        policy: CatalogPolicy | None = None,
        opener: Opener = default_opener,
        share_sessions: bool = False,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.config = config
        self.name = name
        # A server's disabled_tools are denied whoever built the runtime (defence in depth).
        self.policy = deny_disabled_tools(policy or CatalogPolicy(), servers)
        self.servers = {s.name: s for s in servers}
        self.cards = cards.subset(self.servers) if hasattr(cards, "subset") else cards
        self.embedder = embedder
        self.cache = cache
        self.redactor = Redactor.from_config(config)
        self.audit: AuditSink = open_audit(config, self.redactor)
        metrics.track(self)
        self.tracker = DriftTracker(lambda: self.cards, self._on_drift_change)
        """Every listed tool's standing against its card, shared by discover, call and status."""
        self.index = ServingIndex(name)
        """The index ``discover`` searches, rebuilt when the servable tools change."""
        self.content = CatalogContent(name)
        """Each server's resources and prompts (not attested; served for carded servers only)."""
        self._checked = anyio.Event()
        """Set once no server is still connecting (:attr:`unchecked` empty)."""
        self._settle_waited = False
        self.card_errors: dict[str, str] = {}
        self.started_at = time.time()
        self.gateway = Gateway(
            config.gateway,
            servers,
            opener=answering(opener, input_gate(name, self.policy, self.audit, servers)),
            on_open=self._on_open,
            admit=lambda server, tool: admit_upstream(self, server, tool),
            redactor=self.redactor,
            share_sessions=share_sessions,
        )
        self.passthrough = ContentPassthrough(
            name=name,
            config=config,
            servers=self.servers,
            cards=lambda: self.cards,
            content=self.content,
            gateway=self.gateway,
        )
        """Resources, prompts, completion and subscriptions through the gateway."""
        self.validators = SchemaValidators()
        """Each tool's compiled input-schema validator, for the call pipeline's ``validate``."""
        self.maintenance = Maintenance(
            name,
            config.gateway.relist_interval,
            self.relist,
            lambda: self.gateway.pool.sweep_idle(),
        )
        """The background re-list and idle sweep (pooled mode only: :meth:`start_maintenance`)."""
        self.learning: CatalogLearning | None = None
        """Learning from use (``[learning]``); None when off or its log cannot open."""

    @property
    def drift(self) -> DriftReport:
        """The current drift report (read from the one :attr:`drift_view`)."""
        return self.tracker.report

    @property
    def drift_view(self) -> DriftView:
        """The catalog's one drift view (held by :attr:`tracker`)."""
        return self.tracker.view

    @property
    def live(self) -> dict[str, ServerDef]:
        """The latest listing of each server that listed."""
        return self.tracker.live

    @property
    def unchecked(self) -> set[str]:
        """Servers whose live listing has not been compared with their card yet."""
        return self.tracker.unchecked

    # -- lifecycle -------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        config: Config,
        servers: Sequence[ServerConfig],
        *,
        name: str = "default",
        cards: VerifiedCards | None = None,
        embedder: Embedder | None = None,
        policy: CatalogPolicy | None = None,
        opener: Opener = default_opener,
        share_sessions: bool = False,
        eager: bool = True,
        unsafe_throwaway_key: bool = False,
        connect_later: bool = False,
    ) -> CatalogRuntime:
        """Load cards, (eagerly) open sessions to check drift, then build the index.

        ``unsafe_throwaway_key`` signs whatever the servers list right now with a throwaway
        key (:func:`~cartograph.cards.attest.attest_with_unsafe_throwaway_key`) instead of loading
        the operator's cards: for trying things out and for tests, never production.

        ``connect_later`` returns as soon as the cards are verified and the index
        is built, so ``discover`` can answer at once; the caller then runs
        :meth:`connect_upstreams` in the background. Until a server's listing
        arrives its tools are served from the card alone (``status`` says
        "unchecked"), and a ``call`` to it waits for its session.
        """
        card_errors: dict[str, str] = {}
        if embedder is None:
            from cartograph.index.embedders import get_embedder

            embedder = get_embedder(config.index.embedder)
        # The model's first load (file check, ONNX session) overlaps card verification.
        warm = warm_up(embedder) if not unsafe_throwaway_key else None
        if cards is None:
            cards, card_errors = (
                (VerifiedCards(), {}) if unsafe_throwaway_key else load_cards(config)
            )
        runtime = cls(
            config,
            servers,
            cards,
            embedder,
            name=name,
            policy=policy or _catalog_policy(config, name),
            opener=opener,
            share_sessions=share_sessions,
            cache=serving_cache(config),
        )
        runtime.card_errors = card_errors
        try:
            if connect_later and not unsafe_throwaway_key:
                runtime.tracker.unchecked.update(runtime.servers)
            elif eager and config.gateway.mode == "pooled":
                await runtime.gateway.open_all()
            elif eager or unsafe_throwaway_key:
                await runtime._list_once()
            if unsafe_throwaway_key:
                runtime._attest_with_unsafe_throwaway_key()
            await runtime.rebuild_index()
            if warm is not None:
                await anyio.to_thread.run_sync(warm.join)
            await runtime._start_learning()
            runtime.start_maintenance()
        except BaseException:
            await runtime.aclose()
            raise
        return runtime

    async def connect_upstreams(self) -> None:
        """Open (or, one-shot, list once) every unchecked server at once; check drift as each lists.

        For a runtime started with ``connect_later``: each server leaves
        :attr:`unchecked` once its listing was compared with its card (or its
        connection failed), and the index is rebuilt at once if that hid or
        restored a tool. A failed server is retried by the first ``call`` to it.
        """

        async def one(cfg: ServerConfig) -> None:
            try:
                if self.gateway.mode == "pooled":
                    await self.gateway.open_all([cfg.name])
                else:
                    await self._list_one(cfg)
            finally:
                self.unchecked.discard(cfg.name)
                if not self.unchecked:
                    self._checked.set()
            await self.rebuild_index()

        async with anyio.create_task_group() as group:
            for name in sorted(self.unchecked):
                group.start_soon(one, self.servers[name])

    async def settled(self, bound: float) -> None:
        """Wait, once and at most ``bound`` seconds, for the servers still connecting.

        Resources and prompts come from live listings (they are not in the cards),
        so right after start-up a ``resources/list`` or ``prompts/list`` would find
        nothing while the upstreams connect — and a client that lists once (the MCP
        Inspector CLI: one request per process) would never see them. The first
        listing waits for the connections instead; later ones answer at once with
        what is there.
        """
        if self._settle_waited or not self.unchecked:
            return
        with anyio.move_on_after(bound):
            await self._checked.wait()
        self._settle_waited = True

    async def _list_once(self) -> None:
        """One-shot mode still needs each server's tools once, to check drift at start."""
        async with anyio.create_task_group() as group:
            for cfg in self.servers.values():
                group.start_soon(self._list_one, cfg)

    async def _list_one(self, cfg: ServerConfig) -> None:
        try:
            session = await self.gateway._opener(cfg)
        except UpstreamError as exc:
            self.gateway.guard(cfg.name).last_error = self.redactor(exc.message)
            return
        try:
            await self._on_open(cfg.name, session, False)
        finally:
            await session.aclose()

    def _attest_with_unsafe_throwaway_key(self) -> None:
        """Sign what the servers list now; a server whose tool names collide gets no card.

        The same name check as ``bootstrap`` (P-NAME-1): without it, a live
        listing with ``echo`` and ``e-cho`` was attested and served whole.
        """
        from cartograph.cards.attest import attest_with_unsafe_throwaway_key
        from cartograph.catalog.model import Catalog
        from cartograph.upstream.names import check_tool_names

        live: list[ServerDef] = []
        for server in (self.live[name] for name in self.servers if name in self.live):
            try:
                check_tool_names(server)
            except NameCollisionError as exc:
                logger.error("server %s is not served: %s (%s)", server.name, exc.message, exc.code)
                self.card_errors[server.name] = exc.code
                continue
            live.append(server)
        self.cards = attest_with_unsafe_throwaway_key(Catalog(servers=tuple(live)))
        self.drift_view.replace(check_drift(self.cards, Catalog(servers=tuple(live))))

    def start_maintenance(self) -> None:
        """Start the background re-list and idle sweep (pooled mode; idempotent)."""
        if self.gateway.mode == "pooled":
            self.maintenance.start()

    async def relist(self) -> None:
        """Re-list every live upstream session now and fold the result into the drift view."""
        await self.tracker.relist(self.gateway.pool.live_sessions())

    async def _start_learning(self) -> None:
        """Open the usage log; a log that cannot open costs learning, never serving."""
        from cartograph.learning import open_learning

        try:
            learning = await anyio.to_thread.run_sync(
                open_learning, self.config, self.name, self.embedder, open_usage_store
            )
            if learning is not None:
                await learning.sync(self.cards)
        except UsageLogError as exc:
            logger.warning("learning is off for catalog %s: %s (%s)", self.name, exc, exc.code)
            return
        self.learning = learning

    async def aclose(self) -> None:
        metrics.untrack(self)
        await self.maintenance.aclose()
        await self.index.aclose()
        try:
            await self.gateway.aclose()
        finally:
            if self.audit.blocking:  # a database sink drains its spool on close
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.audit.close)
            else:
                self.audit.close()
            if self.learning is not None:
                # Closing checkpoints the WAL: file I/O, so off the event loop, and
                # shielded so a cancelled shutdown still closes the log.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.learning.close)

    # -- drift and the index ------------------------------------------------------

    async def _on_open(self, server: str, session: Upstream, restarted: bool) -> None:
        """After every (re)open: re-list and re-check drift, then list resources and prompts."""
        await self.tracker.on_open(server, session, restarted)
        await self.content.opened(server, session)

    def apply_listing(self, server: str, live: ServerDef) -> bool:
        """Compare ``server``'s listing (live, or from a catalog snapshot) with its card.

        Returns True when that changed which tools are withheld. ``discover``
        hides them at once; :meth:`rebuild_index` makes the index follow.
        """
        return self.tracker.apply_listing(server, live)

    def _on_drift_change(self) -> None:
        """A listing changed what is withheld: rebuild the index in the background.

        Until it is done, :meth:`discover` hides newly blocked tools itself.
        """
        if self.index.current is not None:
            self.index.schedule(self.rebuild_index)

    async def reload_cards(self) -> dict[str, Any]:
        """Verify the state directory's card set again and serve it; in-flight calls go on.

        The new set is loaded and verified in a worker thread (against the trust
        set as it is on disk now), then swapped in at once: every live listing is
        re-compared with the new cards, the index is rebuilt from them, and the
        calls already running finish against the cards they started with. When
        nothing verifies, the old set stays and the error is raised.
        """
        cards, errors = await anyio.to_thread.run_sync(load_cards, self.config)
        cards = cards.subset(self.servers)
        if not cards:
            raise CartographError(
                f"catalog {self.name}: no card of its servers verified; kept the old set "
                "(run `cartograph cards verify`)",
                code=codes.NO_VERIFIED_CARDS,
            )
        self.cards = cards
        self.card_errors = {k: v for k, v in errors.items() if k in self.servers}
        self.validators.clear()
        for server, live in list(self.live.items()):
            self.drift_view.update_server(
                server, check_server_drift(cards, server, list(live.tools))
            )
        self.index.excluded = None  # the cards changed: rebuild even if the same tools are out
        await self.rebuild_index()
        return {"cards": len(cards), "refused": dict(sorted(self.card_errors.items()))}

    def excluded(self) -> frozenset[ToolKey]:
        """Carded tools that must not be discoverable: drifted, missing, or denied by policy."""
        return excluded_tools(self.cards, self.drift, self.policy)

    async def rebuild_index(self) -> None:
        """(Re)build the index when the set of servable tools changed."""
        if await self.index.rebuild(self.excluded(), self._build_index) and self.learning:
            await self.learning.sync(self.cards)

    async def _build_index(self, excluded: frozenset[ToolKey]) -> ToolIndex:
        config, cards, embedder, cache = self.config, self.cards, self.embedder, self.cache

        def build() -> ToolIndex:
            index = build_serving_index(config, cards, embedder, cache=cache, exclude=excluded)
            index.shared_names()  # off the event loop: `status` reads it (P-REL-10)
            return index

        return await run_cpu(build, workers=self.config.index.cpu_workers)

    # -- discover and status ------------------------------------------------------

    def discover(
        self,
        task: str,
        k: int | None = None,
        *,
        method: str | None = None,
        principal: str | None = None,
    ) -> DiscoverResult:
        """The retrieval result (pydantic; rendered by :mod:`cartograph.server.discover_reply`).

        Learning re-ranks it with what ``principal`` (None: the local one) may use.
        """
        from cartograph.index.discover import ABSTAIN_SHOWN, discover
        from cartograph.learning.store import principal_name

        learning = self.learning

        index = self.index.current
        if index is None:
            raise CartographError("the index is not built yet", code=codes.INDEX_NOT_READY)
        want = k or self.config.index.default_k
        # The index may predate the newest drift: ask for enough extra results to
        # drop every tool blocked since it was built and still return ``want``.
        stale = self.index.stale(self.drift_view.blocked)
        result = discover(
            index,
            self.cards,
            task,
            k=want + len(stale),
            method=method,
            reranker=None
            if learning is None
            else learning.for_principal(principal_name(principal)),
        )
        if not stale:
            return result
        limit = min(want, ABSTAIN_SHOWN) if result.abstained else want
        kept = [t for t in result.tools if (t.server, t.tool) not in stale][:limit]
        return result.model_copy(update={"tools": kept})

    def status(self) -> dict[str, Any]:
        """Everything an operator needs at a glance; no secrets (P-LOG-1)."""
        facts = CatalogFacts(
            name=self.name,
            servers=self.servers,
            cards=self.cards,
            card_errors=self.card_errors,
            drift=self.drift,
            listed=self.live.keys(),
            unchecked=self.unchecked,
            gateway=self.gateway.snapshot(),
            started_at=self.started_at,
            shared=self.index.current.shared_names() if self.index.current is not None else {},
        )
        report: dict[str, Any] = self.redactor.data(catalog_status(facts))
        return report


def _catalog_policy(config: Config, name: str) -> CatalogPolicy:
    for catalog in config.catalogs:
        if catalog.name == name:
            return catalog.policy
    return CatalogPolicy()


def load_cards(config: Config) -> tuple[VerifiedCards, dict[str, str]]:
    """Verified cards, and each refused card's error code (``status`` shows why a card is null)."""
    from cartograph.index.serving import serving_cards_and_failures

    return serving_cards_and_failures(config, [s.name for s in config.enabled_servers])
