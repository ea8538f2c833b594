"""Deterministic synthetic MCP catalogs of any size, for the latency benchmarks.

Tools are built from word lists (verbs, objects, service domains, argument
names) so their text reads like real tool descriptions, and every tool keeps
its components, so a benchmark can compose a plausible vector for it from a
few hundred real embeddings instead of embedding 100k texts (see
``discover_latency.py``). The same ``(tools, seed)`` always gives the same
catalog.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from cartograph.catalog.model import Catalog, ServerDef, ToolDef

TOOLS_PER_SERVER = 25


def _words(text: str, sep: str) -> tuple[str, ...]:
    return tuple(text.split(sep))


VERBS = _words(
    "get list search create update delete archive export import summarise convert translate "
    "schedule cancel send fetch upload download merge validate render classify tag share "
    "approve reject monitor analyse compare sync publish restore backup index rank filter "
    "transcribe annotate estimate forecast",
    " ",
)

OBJECTS = _words(
    "invoice|customer record|pull request|issue|branch|commit|calendar event|meeting|email|"
    "slack message|channel|file|folder|spreadsheet row|database table|sql query|dashboard|"
    "chart|pdf report|word document|slide deck|image|video|audio clip|transcript|playlist|"
    "weather forecast|stock quote|exchange rate|news article|blog post|tweet|web page|"
    "search result|map route|place|flight|hotel booking|train ticket|package shipment|"
    "order|product listing|inventory item|support ticket|user account|api key|secret|"
    "container|kubernetes pod|deployment|log entry|metric|alert|incident|backup snapshot|"
    "dns record|certificate|email campaign|survey response|contact|lead|opportunity|task|"
    "project|milestone|note|wiki page|bookmark|recipe|workout|sleep record|expense|budget|"
    "payment|subscription|coupon|review|rating|translation|glossary term|dataset|model run|"
    "notebook cell|paper abstract|citation|patent|court case|contract|signature request|"
    "form submission|webhook|cron job|feature flag|experiment|ab test|heatmap|word cloud",
    "|",
)

DOMAINS = _words(
    "billing|crm|github|gitlab|jira|linear|notion|confluence|google drive|dropbox|slack|"
    "discord|gmail|outlook|calendar|zoom|postgres|mysql|bigquery|snowflake|grafana|datadog|"
    "sentry|pagerduty|kubernetes|docker|aws|azure|cloudflare|stripe|shopify|salesforce|"
    "hubspot|zendesk|intercom|figma|canva|youtube|spotify|twitter|reddit|arxiv|pubmed|"
    "wikipedia|openstreetmap|weather service|finance api|news api|travel|shipping|hr|"
    "accounting|legal|health|fitness|education|research",
    "|",
)

QUALIFIERS = _words(
    "by id|by date range|matching a keyword|for the current user|in bulk|with pagination|"
    "as JSON|as CSV|as markdown|with optional filters|sorted by relevance|from the last 30 days|"
    "with a preview|including metadata|for a team|for a given region",
    "|",
)

PARAMS = (
    ("id", "string", "Identifier of the {object}"),
    ("query", "string", "Free-text search over {object}s"),
    ("limit", "integer", "Maximum number of {object}s to return"),
    ("cursor", "string", "Pagination cursor from a previous call"),
    ("start_date", "string", "ISO 8601 start of the range"),
    ("end_date", "string", "ISO 8601 end of the range"),
    ("format", "string", "Output format"),
    ("title", "string", "Title of the {object}"),
    ("body", "string", "Content of the {object}"),
    ("tags", "array", "Labels to attach"),
    ("owner", "string", "User who owns the {object}"),
    ("dry_run", "boolean", "Only report what would change"),
    ("region", "string", "Region or locale"),
    ("path", "string", "Where to read or write the {object}"),
)


@dataclass(frozen=True)
class ToolParts:
    """What a synthetic tool was made from: the parts its vector is composed of."""

    verb: str
    obj: str
    domain: str
    qualifier: str


Parts = dict[tuple[str, str], ToolParts]


def synthetic_catalog(tools: int, seed: int = 7) -> tuple[Catalog, Parts]:
    """A catalog of ``tools`` tools on ``ceil(tools / 25)`` servers, and each tool's parts."""
    rng = random.Random(seed)
    servers: list[ServerDef] = []
    parts: dict[tuple[str, str], ToolParts] = {}
    for number in range(-(-tools // TOOLS_PER_SERVER)):
        count = min(TOOLS_PER_SERVER, tools - number * TOOLS_PER_SERVER)
        server, server_parts = _server(rng, number, count)
        servers.append(server)
        parts.update(server_parts)
    return Catalog(servers=tuple(servers)), parts


def _server(rng: random.Random, number: int, count: int) -> tuple[ServerDef, Parts]:
    domain = DOMAINS[number % len(DOMAINS)]
    name = f"{domain.replace(' ', '-')}-{number}"
    objects = rng.sample(OBJECTS, 6)
    seen: set[str] = set()
    tools: list[ToolDef] = []
    parts: Parts = {}
    while len(tools) < count:
        verb, obj, qualifier = rng.choice(VERBS), rng.choice(objects), rng.choice(QUALIFIERS)
        tool_parts = ToolParts(verb, obj, domain, qualifier)
        tool_name = f"{tool_parts.verb}_{tool_parts.obj.replace(' ', '_')}"
        if tool_name in seen:
            tool_name = f"{tool_name}_{len(tools)}"
        seen.add(tool_name)
        tools.append(_tool(rng, tool_name, tool_parts))
        parts[(name, tool_name)] = tool_parts
    listed = f"{', '.join(objects[:-1])} and {objects[-1]}"
    description = f"{domain.title()} integration: work with {listed}."
    return ServerDef(name=name, description=description, tools=tuple(tools)), parts


def _tool(rng: random.Random, name: str, p: ToolParts) -> ToolDef:
    description = (
        f"{p.verb.capitalize()} {p.obj}s in {p.domain} {p.qualifier}. "
        f"Returns the affected {p.obj}s and a status message."
    )
    chosen = rng.sample(PARAMS, rng.randint(1, 4))
    properties: dict[str, Any] = {
        pname: {"type": ptype, "description": pdesc.format(object=p.obj)}
        | ({"items": {"type": "string"}} if ptype == "array" else {})
        for pname, ptype, pdesc in chosen
    }
    schema = {"type": "object", "properties": properties, "required": [chosen[0][0]]}
    return ToolDef.model_validate({"name": name, "description": description, "inputSchema": schema})


def synthetic_queries(count: int, seed: int = 11) -> list[str]:
    """Tasks phrased like an agent's: one to three steps over the word lists."""
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        steps = [
            f"{rng.choice(VERBS)} the {rng.choice(OBJECTS)}s in {rng.choice(DOMAINS)}"
            for _ in range(rng.randint(1, 3))
        ]
        queries.append((", then ".join(steps)).capitalize())
    return queries
