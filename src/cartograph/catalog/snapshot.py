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
from cartograph.errors import CatalogError, StateFileError
from cartograph.fsutil import atomic_write_text, read_bounded
from cartograph.validation import first_problem

MAX_CATALOG_BYTES: Final = 64 * 1024 * 1024


def load_catalog(path: Path) -> Catalog:
    """Load a snapshot, failing with an error that names the file and the problem."""
    try:
        data = read_bounded(path, MAX_CATALOG_BYTES)  # a regular file, bounded (P-REL-13)
    except OSError as exc:
        raise CatalogError(
            f"{path}: cannot read catalog snapshot ({exc.strerror}); check the --catalog path",
            code=codes.CATALOG_UNREADABLE,
        ) from exc
    except StateFileError as exc:
        too_large = exc.code == codes.STATE_FILE_TOO_LARGE
        raise CatalogError(
            f"{path}: catalog snapshot not read: {exc.message}",
            code=codes.CATALOG_TOO_LARGE if too_large else codes.CATALOG_UNREADABLE,
        ) from exc
    try:
        raw = json.loads(data.decode("utf-8"))
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
