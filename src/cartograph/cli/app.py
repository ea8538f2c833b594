"""The root Typer app and the options every command shares."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, NoReturn

import typer

# Typer vendors its own Click and re-exports neither UsageError, NoArgsIsHelpError nor the
# base Context that TyperGroup.invoke takes.
from typer._click.core import Command, Context
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import DEFAULT_MARKUP_MODE, MarkupMode, TyperCommand, TyperGroup, TyperOption

from cartograph import error_codes as codes
from cartograph.cli.logs import (
    META_KEY,
    LogChoice,
    LogFormat,
    apply,
    log_error,
    logs_json,
    print_error_object,
)
from cartograph.errors import (
    CardError,
    CartographError,
    CatalogError,
    ConfigError,
    NameCollisionError,
    OptionError,
    UpstreamError,
)

if TYPE_CHECKING:
    from cartograph.config.model import Config

DEFAULT_CONFIG_NAME: Final = "cartograph.toml"
CONFIG_ENV: Final = "CARTOGRAPH_CONFIG"

EXIT_CHECK_FAILED: Final = 1
"""The command ran and its check found a problem (``rift --fail-on``, ``cards diff``)."""
EXIT_USAGE: Final = 2
"""The command line is wrong: Click's own usage errors, and :class:`OptionError`."""
EXIT_CONFIG: Final = 3
EXIT_CARDS: Final = 4
EXIT_UPSTREAM: Final = 5
EXIT_OTHER: Final = 6

EXIT_CODES: Final[Sequence[tuple[type[CartographError], int]]] = (
    (OptionError, EXIT_USAGE),
    (ConfigError, EXIT_CONFIG),
    (CatalogError, EXIT_CONFIG),
    (NameCollisionError, EXIT_CONFIG),
    (CardError, EXIT_CARDS),
    (UpstreamError, EXIT_UPSTREAM),
    (CartographError, EXIT_OTHER),
)
"""Error family → exit code, first match wins (docs/errors.md, "Exit codes").

Scripts can tell "fix the command line" (2) from "fix the config or its input files" (3),
"a card or key was refused: re-attest" (4), "an upstream failed: retrying may help" (5)
and anything else (6). Click's own usage error is 2, so no Cartograph error other than
an option error uses it.
"""


def exit_code_for(exc: CartographError) -> int:
    """The process exit code for ``exc``, from :data:`EXIT_CODES`."""
    return next(code for family, code in EXIT_CODES if isinstance(exc, family))


class CartographGroup(TyperGroup):
    """The root command group: the one place errors become a stderr line and an exit code.

    The line is a JSON object (``code``, ``message``, ...) when the root was given
    ``--log-format json`` or the command ``--json``.

    It lives inside the Typer app, not in ``main()``, so in-process runs (``CliRunner``,
    the tests) get exactly what a shell gets. Click's usage errors (an unknown option, a
    value of the wrong type) are cut to one line here too, instead of a boxed panel.
    """

    def make_context(
        self, info_name: str | None, args: list[str], parent: Context | None = None, **extra: Any
    ) -> Context:
        # Here, not at import: an in-process run swaps sys.stdout just before this.
        _help_style(self, DEFAULT_MARKUP_MODE if _stdout_is_terminal() else None)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except NoArgsIsHelpError as exc:
            _no_args_help(exc)

    def invoke(self, ctx: Context) -> Any:
        json_out = _asked_for_json(ctx.args)  # read before super() consumes the arguments
        try:
            return super().invoke(ctx)
        except CartographError as exc:
            if logs_json(ctx.meta):
                log_error(exc.message, exc.code)
            elif json_out:
                print_error_object(exc.message, exc.code)
            else:
                from cartograph.cli.output import print_error

                print_error(exc)
            raise typer.Exit(exit_code_for(exc)) from None
        except UsageError as exc:
            if isinstance(exc, NoArgsIsHelpError):
                _no_args_help(exc)
            _print_usage_error(exc, logs_json=logs_json(ctx.meta), json_out=json_out)
            raise typer.Exit(EXIT_USAGE) from None


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError, OSError):  # replaced or closed
        return False


def _help_style(command: Command, mode: MarkupMode) -> None:
    """Rich help (boxes, padded to the width) on a terminal; Click's plain help when piped.

    Rich help opens with a blank padding line and pads every line with spaces, so
    ``cartograph --help | head`` started with blank lines; plain help starts at ``Usage:``.
    """
    if isinstance(command, TyperCommand | TyperGroup):
        command.rich_markup_mode = mode
    for sub in getattr(command, "commands", {}).values():
        _help_style(sub, mode)


def _no_args_help(exc: NoArgsIsHelpError) -> NoReturn:
    """A group run without a command: its help (rich help printed itself already), exit 2."""
    if exc.message.strip():  # plain help comes back as the message; Typer would drop it
        typer.echo(exc.message)
    raise typer.Exit(EXIT_USAGE)


def _asked_for_json(args: Sequence[str]) -> bool:
    """Whether the subcommand's arguments hold ``--json`` (before a ``--``, if any)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def _print_usage_error(exc: UsageError, *, logs_json: bool, json_out: bool) -> None:
    from cartograph.cli.output import stderr

    command = exc.ctx.command_path if exc.ctx is not None else "cartograph"
    message = f"{exc.format_message()} (see `{command} --help`)"
    if logs_json:
        log_error(message, "usage")
    elif json_out:
        print_error_object(message, "usage")
    else:
        stderr.print(f"error (usage): {message}", highlight=False, markup=False)


_typer_display_type = TyperOption.display_type_rich


def _display_type(self: TyperOption, ctx: Context) -> str | None:
    """The type label in rich help, none for a flag: ``--json`` takes no value.

    Typer 0.29 labels every flag ``<bool>`` (``--no-raw <bool>``, even ``--help``),
    which reads as if the flag wanted ``true``/``false``. There is no per-app hook
    (Typer builds its options itself), so the one method is replaced here.
    """
    if self.is_flag or self.count:
        return None
    return _typer_display_type(self, ctx)


TyperOption.display_type_rich = _display_type  # type: ignore[method-assign]  # no Typer hook


app = typer.Typer(
    cls=CartographGroup,
    name="cartograph",
    help="Federated MCP proxy: signed capability cards, tool retrieval, Rift, gateway.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help=f"Config file (default: ${CONFIG_ENV} or ./{DEFAULT_CONFIG_NAME}).",
    ),
]
CatalogOption = Annotated[
    Path | None,
    typer.Option("--catalog", help="Use a catalog.json snapshot instead of live servers."),
]
SnapshotOption = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        help="Use a catalog.json snapshot instead of the operator's cards: its cards are "
        "attested in memory with a throwaway key, so the output is unsigned.",
    ),
]
"""``--catalog`` for commands that sign a snapshot in memory by design (rift, stubs)."""
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _known_embedder(value: str | None) -> str | None:
    """Refuse an unknown ``--embedder`` while parsing: a usage error (2), before any work."""
    if value is None:
        return None
    from cartograph.index.embedders import embedder_names

    _refuse_unknown("--embedder", value, embedder_names(), "embedders", codes.UNKNOWN_EMBEDDER)
    return value


def _known_ranker(value: str | None) -> str | None:
    """Refuse an unknown ``--method`` while parsing: a usage error (2), before any work."""
    if value is None:
        return None
    from cartograph.index.rankers import RANKER_NAMES

    _refuse_unknown("--method", value, RANKER_NAMES, "rankers", codes.UNKNOWN_RANKER)
    return value


def _refuse_unknown(flag: str, value: str, known: Sequence[str], what: str, code: str) -> None:
    if value in known:
        return
    from cartograph.suggest import close_matches

    matches = close_matches(value, known)
    hint = f"did you mean {' or '.join(repr(m) for m in matches)}? " if matches else ""
    raise OptionError(
        f"{flag} {value!r}: no such {what[:-1]}; {hint}(known {what}: {', '.join(known)})",
        code=code,
    )


EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder", help="Embedder (default: config or minilm).", callback=_known_embedder
    ),
]
MethodOption = Annotated[
    str | None,
    typer.Option(
        "--method",
        "-m",
        help="Ranker: hybrid, two-stage, dense, bm25, jaccard, random.",
        callback=_known_ranker,
    ),
]


def resolve_config_path(explicit: Path | None) -> Path:
    """The config path a command should load: flag, then env, then ./cartograph.toml."""
    if explicit is not None:
        return explicit
    from_env = os.environ.get(CONFIG_ENV)
    return Path(from_env) if from_env else Path(DEFAULT_CONFIG_NAME)


def load_config_or_defaults(explicit: Path | None) -> Config:
    """The config file, or defaults when none was named and the default one is absent.

    For commands a ``--catalog`` snapshot alone can drive (``rift``, ``stubs``): a
    config file that was named (flag or env) and is missing still fails to load.
    """
    from cartograph.config.loader import load_config
    from cartograph.config.model import Config

    resolved = resolve_config_path(explicit)
    if explicit is None and not resolved.exists():
        return Config()
    return load_config(resolved)


DebugOption = Annotated[bool, typer.Option("--debug", help="Debug logging (to stderr).")]
LogFormatOption = Annotated[
    LogFormat | None,
    typer.Option(
        "--log-format",
        help="Log lines on stderr: text, or json (one object per line; a command's error "
        "line too). Default: text (serve: its config's [logging] format, else text).",
    ),
]


@app.callback()
def _root(
    ctx: typer.Context, debug: DebugOption = False, log_format: LogFormatOption = None
) -> None:
    """Federated MCP proxy: signed capability cards, tool retrieval, Rift, gateway."""
    choice = LogChoice(debug=debug, format=log_format)
    if debug or log_format is not None:
        apply(choice)
    # As given (a format left unnamed stays None): serve lays its own options and
    # its config's [logging] format over it.
    ctx.meta[META_KEY] = choice


@app.command()
def version(json_out: JsonOption = False) -> None:
    """Print Cartograph's version."""
    from cartograph import __version__

    if json_out:
        from cartograph.cli.output import print_json

        print_json({"version": __version__})
        return
    typer.echo(__version__)
