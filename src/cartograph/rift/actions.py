"""Which action a tool's name states, and whether two names state different ones.

Card embeddings put ``get_issue`` and ``update_issue`` close together: same
object, same arguments, similar prose. But a task almost always states its
action ("update issue 12"), so an agent that reads names does not mix them up.
Rift's validation (docs/rift.md) found that most HIGH clusters without any
observed confusion were exactly such pairs (start/stop, get/set, insert/delete).

The table maps an action verb to its class; synonyms share a class
(``retrieve`` = ``get``), so ``get_page``/``retrieve_page`` are *not*
separated. A name's action is its first word that is a known verb; a name
without one states no action and is never separated by this rule. The table
is general English, not drawn from any evaluation set.
"""

from __future__ import annotations

from typing import Final

from cartograph.rift.tokens import words

_CLASSES: Final = {
    "read": "get retrieve read show view describe inspect info display peek",
    "list": "list enumerate browse",
    "search": "search find query lookup look locate",
    "create": "create add new post insert make generate build init initialize",
    "update": "update patch edit modify set change rename replace upgrade configure",
    "write": "write save store put",
    "delete": "delete remove del destroy drop clear erase purge trash",
    "start": "start begin launch",
    "stop": "stop end halt terminate kill cancel abort",
    "open": "open",
    "close": "close",
    "push": "push upload publish send",
    "pull": "pull download",
    "fetch": "fetch",
    "merge": "merge",
    "commit": "commit",
    "log": "log logs history",
    "diff": "diff compare",
    "install": "install",
    "uninstall": "uninstall",
    "enable": "enable",
    "disable": "disable",
    "approve": "approve accept",
    "reject": "reject deny decline",
    "copy": "copy duplicate clone",
    "move": "move",
    "import": "import",
    "export": "export",
    "convert": "convert transform",
    "subscribe": "subscribe",
    "unsubscribe": "unsubscribe",
    "lock": "lock",
    "unlock": "unlock",
    "navigate": "navigate goto",
    "click": "click",
    "hover": "hover",
    "type": "type fill",
    "select": "select choose",
    "drag": "drag",
    "screenshot": "screenshot capture snapshot",
    "evaluate": "evaluate eval execute exec run invoke call",
    "wait": "wait",
    "validate": "validate check verify test",
    "checkout": "checkout switch",
    "reset": "reset revert restore undo",
    "tag": "tag label",
    "assign": "assign",
    "comment": "comment reply",
    "review": "review",
    "resize": "resize scale",
    "rollout": "rollout rollback",
}
ACTIONS: Final[dict[str, str]] = {
    verb: action for action, verbs in _CLASSES.items() for verb in verbs.split()
}


def action_of(name: str) -> tuple[str, str] | None:
    """(verb as written, action class) of the first known verb in ``name``, if any."""
    for word in words(name):
        action = ACTIONS.get(word)
        if action is not None:
            return word, action
    return None


def different_actions(a: str, b: str) -> tuple[str, str] | None:
    """The two verbs when names ``a`` and ``b`` state different actions, else None."""
    first, second = action_of(a), action_of(b)
    if first is None or second is None or first[1] == second[1]:
        return None
    return first[0], second[0]


__all__ = ["ACTIONS", "action_of", "different_actions"]
