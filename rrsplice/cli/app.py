"""The click group, error handling and output helpers shared by every command."""

from __future__ import annotations

import importlib
import json
import sys

import click

from ..errors import RRSpliceError


# command -> the module of this package that defines it. Modules are imported when their
# command runs (or for --help), so `rrsplice liveness` does not pay for importing the
# recipe, outline and parser machinery it does not use. tests/test_cli_commands.py keeps
# this table equal to what the modules register.
COMMAND_MODULES = {
    "parse": "cmd_parse", "functions": "cmd_parse", "show": "cmd_parse",
    "liveness": "cmd_liveness",
    "mma": "cmd_mma", "phases": "cmd_mma", "uses": "cmd_mma",
    "check": "cmd_recipe", "apply": "cmd_recipe", "recipe": "cmd_recipe",
    "stages": "cmd_recipe",
    "outline": "cmd_outline", "verify": "cmd_outline",
    "body": "cmd_body",
}


class _Group(click.Group):
    """Loads command modules on demand, and turns every RRSpliceError (and unreadable
    files) into a message and exit code 2, never a traceback."""

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMAND_MODULES:
            importlib.import_module(f"{__package__}.{COMMAND_MODULES[name]}")
        return super().get_command(ctx, name)

    def parse_args(self, ctx, args):
        # remembered so an error raised inside a subcommand still knows about --json
        ctx.meta["rrsplice.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except RRSpliceError as exc:
            _fail(exc.render(), getattr(exc, "exit_code", 2), exc)
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
            _fail(f"error: {exc.strerror}: {exc.filename}", 2, exc)


def _fail(message: str, code: int, exc) -> None:
    ctx = click.get_current_context(silent=True)
    as_json = bool(ctx and _wants_json(ctx))
    if as_json:
        payload = exc.to_json() if hasattr(exc, "to_json") else {"message": message}
        click.echo(json.dumps({"ok": False, "error": payload}, indent=2, sort_keys=True))
    else:
        # soft_wrap: never re-wrap an error's source line, or its caret would move
        err_console().print(message, markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


def _wants_json(ctx) -> bool:
    argv = ctx.meta.get("rrsplice.argv")
    if argv is not None:
        return "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv
    while ctx is not None:
        if ctx.params.get("as_json"):
            return True
        ctx = ctx.parent
    return False


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rrsplice")
def main():
    """rrsplice: parse PTX, analyse liveness and mma phases, and splice mma regions of
    huge kernels into calls to native bodies."""


def json_option(f):
    """`--json`: print only JSON (machine-readable, stable key order)."""
    return click.option("--json", "as_json", is_flag=True,
                        help="Print only JSON.")(f)


def entry_option(f):
    return click.option("--entry", "entry", metavar="NAME", default=None,
                        help="Function to use when the module has several.")(f)


def print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


_console = None
_err_console = None


def console():
    """The rich console for human output (imported on first use: JSON output needs none)."""
    global _console
    if _console is None:
        from rich.console import Console
        _console = Console(highlight=False)
    return _console


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console
        _err_console = Console(stderr=True, highlight=False)
    return _err_console


def note(message: str, as_json: bool = False) -> None:
    """A side remark (e.g. which function was chosen) on stderr, never in JSON output."""
    if not as_json:
        err_console().print(f"[dim]note:[/dim] {message}")
