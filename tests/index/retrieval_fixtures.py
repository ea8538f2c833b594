"""Small hand-made catalogs for ranker tests (words chosen so rankings are obvious)."""

from __future__ import annotations

from typing import Any

from cartograph.catalog.model import Catalog


def _tool(name: str, description: str, **props: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
            "required": list(props),
        },
    }


def small_catalog() -> Catalog:
    """Three servers with clearly separated vocabularies."""
    return Catalog.model_validate(
        {
            "servers": [
                {
                    "name": "weather",
                    "description": "Weather forecasts and climate data.",
                    "tools": [
                        _tool("get_forecast", "Weather forecast for a city.", city="City name"),
                        _tool("get_alerts", "Severe weather alerts for a region.", region="Region"),
                    ],
                },
                {
                    "name": "files",
                    "description": "Read and write files on disk.",
                    "tools": [
                        _tool("read_file", "Read a text file from disk.", path="File path"),
                        _tool("write_file", "Write text into a file on disk.", path="File path"),
                    ],
                },
                {
                    "name": "charts",
                    "description": "Draw charts from numbers.",
                    "tools": [
                        _tool("bar_chart", "Draw a bar chart image from numbers.", data="Numbers"),
                        _tool("pie_chart", "Draw a pie chart image from shares.", data="Shares"),
                    ],
                },
            ]
        }
    )
