"""`rrsplice body inline`: the body's PTX in place of the spliced call (one module)."""

from __future__ import annotations

from pathlib import Path

import click

from ..infra.fsutil import write_atomic
from .app import examples, json_option, print_json
from .cmd_body import body_group
from .output import say


@body_group.command("inline", epilog=examples(
    "rrsplice apply recipes/swin_big_sm89.py -o /tmp/patched.ptx",
    "rrsplice body new recipes/swin_big_sm89.py --staging registers -o /tmp/body.cu",
    "nvcc -rdc=true -ptx -arch=sm_89 -O3 /tmp/body.cu -o /tmp/body.ptx",
    "rrsplice body inline /tmp/patched.ptx /tmp/body.ptx -o /tmp/inlined.ptx"))
@click.argument("patched", type=click.Path(dir_okay=False))
@click.argument("body", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False),
              help="The module to write: PATCHED with the call replaced by BODY's function.")
@click.option("--callee", default=None,
              help="The function to inline (default: the one PATCHED declares and BODY "
                   "defines).")
@json_option
def body_inline_cmd(patched, body, out, callee, as_json):
    """Replace PATCHED's call of the native body by BODY's PTX (the body compiled with
    `nvcc -rdc=true -ptx`), so ptxas compiles one function with no call: no callee-saved
    registers saved and restored, nothing kept across a call."""
    from ..ptx.parser import parse
    from ..workflow.inline import inline_call
    res = inline_call(parse(patched), parse(body), callee)
    write_atomic(out, res.text.encode(), protect=(patched, body))
    if as_json:
        print_json({"output": str(out), "callee": res.callee, "kernel": res.kernel,
                    "call_line": res.line, "statements": res.statements})
        return
    say(f"wrote {out}: {res.callee} ({res.statements} statements) inlined into {res.kernel} "
        f"at line {res.line} of {Path(patched).name}")
