"""The CLI's lazy command table matches what the command modules register."""

import importlib
import pkgutil

from click.testing import CliRunner

import rrsplice.cli as cli
from rrsplice.cli.app import COMMAND_MODULES, main


def test_command_table_matches_the_modules():
    registered = {}
    for info in pkgutil.iter_modules(cli.__path__):
        if info.name.startswith("cmd_"):
            mod = importlib.import_module(f"rrsplice.cli.{info.name}")
            for name, cmd in main.commands.items():
                if cmd.callback is not None and cmd.callback.__module__ == mod.__name__:
                    registered[name] = info.name
                elif getattr(cmd, "commands", None) is not None and name not in registered:
                    registered.setdefault(name, None)
    # groups (recipe, stages) have callbacks too; every command must be in the table
    assert set(main.commands) == set(COMMAND_MODULES)
    for name, module in registered.items():
        if module is not None:
            assert COMMAND_MODULES[name] == module, name


def test_help_lists_every_command():
    out = CliRunner().invoke(main, ["--help"]).output
    for name in COMMAND_MODULES:
        assert name in out


def test_unknown_command_is_a_usage_error():
    r = CliRunner().invoke(main, ["no-such-command"])
    assert r.exit_code == 2 and "No such command" in r.output
