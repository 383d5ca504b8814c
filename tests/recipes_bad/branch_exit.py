"""branch-exit: @%p5 bra $L__BB0_8 (line 113) leaves lines 103-113 early."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_cfg_base", _p.Path(__file__).with_name("_cfg.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make((103, 114), ["%r4", "%r5", "%r6", "%r8"], ["%r10", "%r11"])
