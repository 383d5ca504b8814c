"""The click group, error handling and output helpers shared by every command."""

from __future__ import annotations

import gc
import importlib
import json
import sys

import click

from ..ptx.diagnostic import Diagnostic
from ..ptx.errors import RRSpliceError
from .output import note, stdout_is_terminal  # noqa: F401  (note: re-exported)

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
    "fragments": "cmd_fragments", "descriptor": "cmd_descriptor",
    "doctor": "cmd_doctor", "body": "cmd_body",
    "cache": "cmd_cache",
}


class _Group(click.Group):
    """Loads command modules on demand, and turns every RRSpliceError (and unreadable
    files) into a compiler-style diagnostic on stderr and exit code 2, never a traceback."""

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
        # A command makes one pass over one or two models of millions of objects that live
        # until it returns: the cyclic collector would only traverse them again and again
        # (a full collection costs ~0.3 s on a 500k-line module), so it waits until the end.
        was = gc.isenabled()
        gc.disable()
        try:
            return super().invoke(ctx)
        except RRSpliceError as exc:
            _fail(exc.diagnostic(), getattr(exc, "exit_code", 2), exc)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                PermissionError) as exc:
            _fail(Diagnostic(message=str(exc.strerror), path=exc.filename).format(), 2, exc)
        finally:
            if was:
                gc.enable()


def _fail(message: str, code: int, exc) -> None:
    ctx = click.get_current_context(silent=True)
    as_json = bool(ctx and _wants_json(ctx))
    if as_json:
        payload = exc.to_json() if hasattr(exc, "to_json") else {"message": message}
        click.echo(json.dumps({"ok": False, "error": payload}, indent=2, sort_keys=True))
    else:
        click.echo(message, err=True)
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


def _print_version(ctx, _param, value) -> None:
    """`--version`: rrsplice's version and the ptxas/nvlink it would run."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    from ..infra.tools import tool_provenance
    try:
        mine = version("rrsplice")
    except PackageNotFoundError:
        from .. import __version__ as mine
    click.echo(f"rrsplice {mine}")
    for name in ("ptxas", "nvlink"):
        t = tool_provenance(name)
        if t["path"]:
            click.echo(f"{name}: {t['path']} ({t['version']}; found via {t['found_via']})")
        else:
            click.echo(f"{name}: not found ({t['found_via']}); `rrsplice doctor` says how "
                       "to get it")
    ctx.exit(0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"],
                                           "max_content_width": 100},
             epilog="Examples:\n\n\b\n  rrsplice parse corpus_fixtures/*.ptx\n"
                    "  rrsplice check recipes/swin_dec2.py\n"
                    "  rrsplice apply recipes/swin_dec2.py --ptxas sm_89\n\n"
                    "Run `rrsplice COMMAND --help` for a command's options and examples, and "
                    "`rrsplice doctor` to check the tools it needs.")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version,
              help="Show rrsplice's version and the ptxas/nvlink it would use, and exit.")
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


def corpus_option(f):
    """`--corpus DIR`: the first directory a recipe's module is looked up in."""
    return click.option("--corpus", "corpus", metavar="DIR", default=None,
                        help="Corpus directory to resolve the recipe's module in (before "
                             "$RRSPLICE_CORPUS, [tool.rrsplice] corpus, "
                             "~/.cache/d4r-rr-corpus and the bundled fixtures); it must "
                             "exist.")(f)


def any_module_option(f):
    """`--any-module`: allow falling back to another module that defines the entry."""
    return click.option("--any-module", "any_module", is_flag=True,
                        help="When the recipe's module is missing or does not define its "
                             "entry, use the first corpus module that does (said on "
                             "stderr).")(f)


def examples(*lines: str) -> str:
    """A help epilog listing example command lines (kept as written, not re-wrapped)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {x}" for x in lines)


def print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))
