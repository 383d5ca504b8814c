"""`rrsplice cache info|clear`: what the on-disk cache holds, and emptying it."""

from __future__ import annotations

from ..infra import cache
from .app import examples, json_option, main, print_json
from .output import Grid, say


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


@main.group("cache", epilog=examples("rrsplice cache info", "rrsplice cache clear"))
def cache_group():
    """Show or empty the cache of parsed modules, analyses and reports.

    The cache lives in $RRSPLICE_CACHE_DIR (default: the user cache directory), is kept
    under $RRSPLICE_CACHE_MAX_MB (default 1024; least recently used entries are removed
    first) and is off with RRSPLICE_NO_CACHE=1."""


@cache_group.command("info", epilog=examples("rrsplice cache info",
                                             "rrsplice cache info --json"))
@json_option
def info_cmd(as_json):
    """Where the cache is, whether it is used, and its entries and size per area."""
    data = cache.info()
    if as_json:
        print_json(data)
        return
    state = ("off (RRSPLICE_NO_CACHE is set)" if not data["enabled"]
             else "not created yet" if not data["exists"]
             else "in use" if data["trusted"]
             else f"NOT used: {data['untrusted_reason']}")
    say(f"cache directory  {data['directory']}")
    say(f"state            {state}")
    say(f"size             {_mb(data['bytes'])} of at most {_mb(data['max_bytes'])}")
    grid = Grid("area", "entries", "bytes", right=("entries", "bytes"))
    for area, a in data["areas"].items():
        grid.add_row(area, str(a["entries"]), str(a["bytes"]))
    grid.add_row("total", str(data["entries"]), str(data["bytes"]))
    grid.print()


@cache_group.command("clear", epilog=examples("rrsplice cache clear"))
@json_option
def clear_cmd(as_json):
    """Delete every cache entry (only the cache's own files; the directory stays)."""
    before = cache.info()
    removed = cache.clear()
    if as_json:
        print_json({"directory": before["directory"], "removed": removed,
                    "bytes": before["bytes"]})
        return
    say(f"removed {removed} entr{'y' if removed == 1 else 'ies'} ({_mb(before['bytes'])}) "
        f"from {before['directory']}")
