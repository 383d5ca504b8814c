"""mma-pair: only %r19360 of phase 38's {%r19360, %r19361} pair is read back."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_dec2_base", _p.Path(__file__).with_name("_dec2.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make(ret_regs=["%r19360", "%r19370", "%r19371"])
