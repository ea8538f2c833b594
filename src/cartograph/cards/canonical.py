"""RFC 8785 canonical JSON and a strict JSON loader for cards.

What we sign must have exactly one byte form, so signing uses RFC 8785 (JCS)
through the ``rfc8785`` package; ``json.dumps(sort_keys=True)`` is not JCS (it
differs on ``1.0``, ``1e-7``, non-ASCII text and UTF-16 key order). Loading
is strict in the ways JCS cannot express: a duplicate key, ``NaN``, an
integer beyond the IEEE-754 safe range or a non-string key means two parsers
could read different cards from the same bytes, so each is refused with its
own error code (P-SIG-1, P-SIG-2).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import rfc8785

from cartograph import error_codes as codes
from cartograph.errors import CardFormatError

MAX_SAFE_INTEGER: Final = 2**53 - 1
MAX_CARD_BYTES: Final = 8 * 1024 * 1024
MAX_NESTING: Final = 64


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 bytes of ``value``, after the strict checks in :func:`check_value`.

    Fast path: for a value with no floats and no object key outside the Basic
    Multilingual Plane (every card we write), RFC 8785 and C ``json.dumps``
    with sorted keys, no spaces and no ASCII escaping produce the same bytes —
    integers within ±(2^53−1) print as the same digits, strings escape the same
    characters the same way, and code-point key order equals UTF-16 order when
    no key has a supplementary character. Only floats and such keys need the
    pure-Python canonicaliser, which was most of card loading (issue 12);
    ``tests/cards/test_canonical.py`` checks the two agree on generated values.
    """
    if _checked_plain(value, 0):
        return json.dumps(
            value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
        ).encode("utf-8")
    try:
        return bytes(rfc8785.dumps(value))
    except rfc8785.CanonicalizationError as exc:  # defensive: check_value covers these
        raise CardFormatError(
            f"cannot canonicalise value: {exc}", code=codes.CARD_BAD_TYPE
        ) from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_digest(value: Any) -> str:
    """SHA-256 (hex) of the canonical form: the pin format used everywhere in cards."""
    return sha256_hex(canonical_bytes(value))


_BMP_END: Final = "\U00010000"


def _checked_plain(value: Any, depth: int) -> bool:
    """:func:`check_value`, also telling whether the JSON fast path gives the JCS bytes.

    Plain: only dict / list / tuple / str / int (exact types), bool and None,
    and no key with a character beyond U+FFFF.
    """
    if depth > MAX_NESTING:
        raise CardFormatError(
            f"JSON nested deeper than {MAX_NESTING} levels", code=codes.CARD_TOO_DEEP
        )
    kind = type(value)
    if value is None or kind is bool:
        return True
    if kind is str:
        _check_str(value)
        return True
    if kind is int:
        _check_int(value)
        return True
    if kind is dict:
        plain = True
        for key, item in value.items():
            if type(key) is not str:
                check_value(value, depth)  # raises the precise error
                return False
            _check_str(key)
            plain = _checked_plain(item, depth + 1) and plain and (not key or max(key) < _BMP_END)
        return plain
    if kind is list or kind is tuple:
        plain = True
        for item in value:
            plain = _checked_plain(item, depth + 1) and plain
        return plain
    check_value(value, depth)
    return False


def check_value(value: Any, depth: int = 0) -> None:
    """Refuse anything JCS cannot represent exactly, each with its own code."""
    if depth > MAX_NESTING:
        raise CardFormatError(
            f"JSON nested deeper than {MAX_NESTING} levels", code=codes.CARD_TOO_DEEP
        )
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        _check_int(value)
    elif isinstance(value, float):
        _check_float(value)
    elif isinstance(value, str):
        _check_str(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CardFormatError(
                    f"object key {key!r} is not a string", code=codes.CARD_NON_STRING_KEY
                )
            _check_str(key)
            check_value(item, depth + 1)
    elif isinstance(value, Sequence):
        for item in value:
            check_value(item, depth + 1)
    else:
        raise CardFormatError(
            f"value of type {type(value).__name__} is not JSON", code=codes.CARD_BAD_TYPE
        )


def _check_int(value: int) -> None:
    if abs(value) > MAX_SAFE_INTEGER:
        raise CardFormatError(
            f"integer {value} is outside ±(2^53−1) and cannot round-trip through JSON",
            code=codes.CARD_INTEGER_RANGE,
        )


def _check_float(value: float) -> None:
    if not math.isfinite(value):
        raise CardFormatError(f"{value} is not a finite number", code=codes.CARD_NON_FINITE)
    if value.is_integer() and MAX_SAFE_INTEGER < abs(value) < 1e21:
        # JCS prints these as integer literals, which a strict reader must refuse.
        raise CardFormatError(
            f"number {value!r} is an integer outside ±(2^53−1) once canonicalised",
            code=codes.CARD_INTEGER_RANGE,
        )


def _check_str(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CardFormatError(
            "string holds an unpaired surrogate and is not valid Unicode",
            code=codes.CARD_BAD_STRING,
        ) from exc


def loads_strict(data: bytes | str, *, limit: int = MAX_CARD_BYTES) -> Any:
    """Parse JSON refusing duplicate keys, NaN/Infinity, unsafe integers and bad text."""
    if isinstance(data, bytes):
        if len(data) > limit:
            raise CardFormatError(
                f"JSON document is {len(data)} bytes, over the {limit} byte limit",
                code=codes.CARD_TOO_LARGE,
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CardFormatError(f"not UTF-8: {exc}", code=codes.CARD_ENCODING) from exc
    else:
        text = data
        if len(text) > limit:
            raise CardFormatError(
                f"JSON document is over the {limit} byte limit", code=codes.CARD_TOO_LARGE
            )
    try:
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
            parse_int=_safe_int,
            parse_float=_finite_float,
        )
    except CardFormatError:
        raise
    except RecursionError as exc:
        raise CardFormatError("JSON nested too deeply", code=codes.CARD_TOO_DEEP) from exc
    except ValueError as exc:
        raise CardFormatError(f"not valid JSON: {exc}", code=codes.CARD_JSON) from exc
    check_value(value)
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise CardFormatError(f"duplicate JSON key {key!r}", code=codes.CARD_DUPLICATE_KEY)
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise CardFormatError(f"{name} is not allowed in a card", code=codes.CARD_NON_FINITE)


def _safe_int(text: str) -> int:
    if len(text.lstrip("-")) > 16:  # cheap guard before int() on huge digit strings
        raise CardFormatError(
            f"integer {text[:20]}… is outside ±(2^53−1)", code=codes.CARD_INTEGER_RANGE
        )
    value = int(text)
    _check_int(value)
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    _check_float(value)
    return value
