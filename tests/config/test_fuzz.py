"""P-REL-8 (config part): arbitrary input makes the loader raise only documented errors.

Documented means :class:`ConfigError` or :class:`NameCollisionError` (both
``CartographError``s with a code). The seed corpus in ``corpus/`` holds
inputs that once crashed the loader or probe its edges; each runs as a
regression test.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cartograph.config.loader import build_config, load_config
from cartograph.config.model import Config
from cartograph.errors import ConfigError, NameCollisionError

pytestmark = pytest.mark.promise("P-REL-8")

DOCUMENTED = (ConfigError, NameCollisionError)
CORPUS = Path(__file__).parent / "corpus"

SERVER_KEYS = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "transport",
    "enabled",
    "connect_timeout",
    "call_timeout",
    "protocol",
    "type",
    "disabled",
    "stateless",
]
TOP_KEYS = [
    "servers",
    "mcpServers",
    "mcp_json",
    "defaults",
    "state_dir",
    "catalog",
    "gateway",
    "http",
    "catalogs",
    "index",
    "cards",
]

scalars = st.one_of(
    st.none().map(lambda _: ""),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "stdio",
            "sse",
            "http",
            "streamable-http",
            "http://127.0.0.1:1/mcp",
            "${HOME}",
            "${UNSET_VAR}",
            "${X:-1}",
            "discover",
            "../x",
            "\x00",
        ]
    ),
    st.datetimes().map(lambda d: d.replace(tzinfo=dt.UTC)),
)
keys = st.one_of(st.sampled_from(SERVER_KEYS + TOP_KEYS), st.text(max_size=10))
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=10,
)
documents = st.dictionaries(
    st.sampled_from(TOP_KEYS) | st.text(max_size=8),
    st.one_of(
        values,
        st.dictionaries(
            st.text(max_size=12), st.dictionaries(keys, values, max_size=6), max_size=4
        ),
    ),
    max_size=5,
)


def _load_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cartograph.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        with contextlib.suppress(*DOCUMENTED):
            load_config(path, environ={"HOME": "/home/x"})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_arbitrary_text_raises_only_documented_errors(text: str) -> None:
    _load_text(text.encode("utf-8", "replace").decode("utf-8"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_arbitrary_documents_raise_only_documented_errors(document: dict[str, Any]) -> None:
    try:
        result = build_config(document, source=Path("/fuzz/cartograph.toml"), environ={})
    except DOCUMENTED:
        return
    assert isinstance(result, Config)


@pytest.mark.parametrize("seed", sorted(CORPUS.glob("*.toml")), ids=lambda p: p.name)
def test_seed_corpus_raises_only_documented_errors(seed: Path) -> None:
    try:
        load_config(seed, environ={})
    except DOCUMENTED as exc:
        assert exc.code
