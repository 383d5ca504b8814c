"""Writing the body module: header, the module-scope declarations the region needs, the
callee's signature (the extern's, verbatim), its registers, and the body's sections in
the order they run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..ptx.model import Function, Module
from .common import _decl_text, _one_line
from .context import OutlineContext


@dataclass
class BodyParts:
    """The body's sections, each computed by one step of the outliner."""
    region_text: str          # the region's text with every rewrite applied
    rewrite_decls: list       # module-scope declarations the recipe's rewrites need
    param_lines: list         # parameter loads, into the registers the region reads
    recompute_sts: list       # kernel statements recomputing unpassed registers, in order
    reloads: dict             # recompute statement index -> parameter loads to repeat after it
    exit_lines: list          # the exit labels and the exit index they set
    post_lines: list          # the stores the call text reads back


def module_header(module: Module) -> str:
    """The kernel module's `.version`/`.target`/`.address_size` lines."""
    out = []
    for d, v, _ in module.headers:
        out.append(f"{d} {v}")
    return "\n".join(out) + "\n"


_UNSAFE_IN_COMMENT = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\ud800-\udfff]")


def _comment_safe(text: str) -> str:
    """`text` for a `//` comment: a line break in a file name would end the comment and
    make the rest of the name PTX; control characters (and undecodable bytes) as escapes."""
    return _UNSAFE_IN_COMMENT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def assemble(ctx: OutlineContext, parts: BodyParts) -> bytes:
    """The body module's bytes (one `\\n` per line, whatever the kernel used)."""
    module, fn, rng, site = ctx.module, ctx.fn, ctx.rng, ctx.site
    a_line, b_line = ctx.lines
    region_text = parts.region_text
    recompute_sts, reloads = parts.recompute_sts, parts.reloads
    mod_decls = _module_decls(module, region_text)
    out = [f"//\n// {site.callee}: statements s{rng.first}-s{rng.last} (lines {a_line}-{b_line})"
           f" of {fn.name}",
           f"// from {_comment_safe(Path(module.path).name) if module.path else '<text>'}, "
           "outlined by rrsplice "
           f"outline.",
           "//", "", module_header(module).rstrip("\n"), ""]
    out.extend(mod_decls)
    out.extend(parts.rewrite_decls)
    if mod_decls or parts.rewrite_decls:
        out.append("")
    out.append(_signature(site.extern))
    out.append("{")
    out.extend(_register_decls(ctx))
    out.extend(ctx.values.names.decls())
    out.append("")
    out.append("\t// parameters, into the registers the region reads")
    out.extend(parts.param_lines)
    if recompute_sts:
        out.append("\t// registers the call does not pass, recomputed from passed values")
        for st in recompute_sts:
            out.append("\t" + _one_line(st.text))
            if reloads[st.index]:
                out.append("\t// parameters the statement above overwrote")
                out.extend(reloads[st.index])
    if ctx.values.lines:
        out.append("\t// values taken before the region runs")
        out.extend(ctx.values.lines)
    out.append(f"\t// ---- region s{rng.first}-s{rng.last}, lines {a_line}-{b_line}, verbatim ----")
    nl = "\r\n" if "\r\n" in region_text[:2000] else "\n"
    out.append(region_text.rstrip("\r\n").replace(nl, "\n"))
    out.append("\t// ---- end of region ----")
    out.extend(parts.exit_lines)
    if parts.post_lines:
        out.append("\t// the values the call text reads back")
        out.extend(parts.post_lines)
    out.append("\tret;")
    out.append("}")
    return ("\n".join(out) + "\n").encode("utf-8")


def _register_decls(ctx: OutlineContext) -> list:
    """The kernel's top-level `.reg` declarations (those inside the region come with it),
    then the call text's own registers the kernel does not declare."""
    fn, site = ctx.fn, ctx.site
    assert fn.body is not None  # a region lies in a function's body
    start, end = ctx.span
    decls = []
    top_inside = {id(d) for d in fn.body.decls if start <= d.start < end}
    seen = set()
    for d in fn.body.decls:
        if d.space != ".reg" or id(d) in top_inside:
            continue
        key = (d.name, d.count)
        if key in seen:
            continue
        seen.add(key)
        decls.append(_decl_text(d))
    kernel_reg_names = {d.name for d in fn.body.decls if d.space == ".reg"}
    for d in site.local_decls:
        if d.name in kernel_reg_names:
            continue
        decls.append(_decl_text(d))
    return decls


def _module_decls(module: Module, region_text: str) -> list:
    """Initialised `.const`/`.global` variables the region's text names, copied verbatim."""
    out = []
    for sym, d in {d.name: d for d in module.decls}.items():
        if d.init is not None and d.space in (".const", ".global") \
                and re.search(r"(?<![\w$%])" + re.escape(sym) + r"(?![\w$])", region_text):
            out.append(module.text[d.start:d.end].strip())
    return out


def _signature(ext: Function) -> str:
    rets = ""
    if ext.ret_params:
        rets = " (" + ", ".join(str(p) for p in ext.ret_params) + ")"
    params = ",\n".join("\t" + str(p) for p in ext.params)
    return f".visible .func{rets} {ext.name}" + (f"(\n{params}\n)" if ext.params else "")
