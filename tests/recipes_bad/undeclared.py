"""undeclared: the call text uses %rswin2 but declares only %rswin<2>."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_dec2_base", _p.Path(__file__).with_name("_dec2.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make(reg_count=2)
