"""Reading and writing ``catalog.json`` snapshots.

The shape is ``{"servers": [{"name", "description", "tools": [...]}]}``: the
same as the public benchmark data, so evaluation and live federations share
one loader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from cartograph import error_codes as codes
from cartograph.catalog.model import Catalog
from cartograph.errors import CatalogError
from cartograph.fsutil import atomic_write_text
from cartograph.validation import first_problem

MAX_CATALOG_BYTES: Final = 64 * 1024 * 1024


def load_catalog(path: Path) -> Catalog:
    """Load a snapshot, failing with an error that names the file and the problem."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CatalogError(
            f"{path}: cannot read catalog snapshot ({exc.strerror}); check the --catalog path",
            code=codes.CATALOG_UNREADABLE,
        ) from exc
    if size > MAX_CATALOG_BYTES:
        raise CatalogError(
            f"{path}: catalog snapshot is {size} bytes, over the {MAX_CATALOG_BYTES} byte limit",
            code=codes.CATALOG_TOO_LARGE,
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{path}: not valid JSON: {exc}", code=codes.CATALOG_JSON) from exc
    try:
        return Catalog.model_validate(raw)
    except ValidationError as exc:
        problem = first_problem(exc)
        raise CatalogError(
            f"{path}: bad catalog shape at {problem.key}: {problem.message}",
            code=codes.CATALOG_SHAPE,
        ) from exc


def save_catalog(catalog: Catalog, path: Path) -> None:
    """Write a snapshot atomically, in MCP wire field names."""
    body = catalog.model_dump(mode="json", by_alias=True, exclude_none=True)
    atomic_write_text(path, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
