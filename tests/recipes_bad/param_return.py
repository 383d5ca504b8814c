"""param-return: a recipe declaring a native body whose results come back as the call's
`.param` return value (fine for ptxas, an error for the zluda profile)."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_dec2_base", _p.Path(__file__).with_name("_dec2.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE
# the native body's source: makes zluda this recipe's default check target
BODY = "d4r_swin_dec2.cu"


def _call():
    text = base.call_text(ret_regs=[])
    lines = [ln for ln in text.split("\n") if "%laneid" not in ln and "mad.lo" not in ln]
    i = next(k for k, ln in enumerate(lines) if "call.uni" in ln)
    lines[i] = lines[i].replace("call.uni ", "call.uni (rv), ")
    lines.insert(i, "\t.param .align 8 .b8 rv[16];")
    reads = ["\tld.param.b32 %s, [rv+%d];" % (r, 4 * k) for k, r in enumerate(base.RET_REGS)]
    return "\n".join(lines[:i + 2] + reads + lines[i + 2:])


def _extern():
    return base.extern_text().replace(".extern .func ",
                                      ".extern .func (.param .align 8 .b8 d4r_ret[16]) ")


def recipe():
    return base.make(call=_call(), extern=_extern())
