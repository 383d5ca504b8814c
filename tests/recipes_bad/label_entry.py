"""label-entry: $L__BB0_3 (line 102) inside lines 93-111 is targeted by the prologue's @%p1 bra."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_cfg_base", _p.Path(__file__).with_name("_cfg.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make((93, 112), ["%r1", "%r3", "%r4", "%r5", "%r6", "%r8"], ["%r5", "%r8", "%r10", "%r11", "%r12"], pred="%p2")
