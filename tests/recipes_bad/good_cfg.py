"""Passes every check: cfg_loops.ptx lines 93-101 (the loop), everything live passed and returned."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_cfg_base", _p.Path(__file__).with_name("_cfg.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make((93, 102), ["%r1", "%r3", "%r5", "%r8"], ["%r5", "%r6", "%r8"], pred="%p2")
