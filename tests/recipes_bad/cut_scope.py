"""cut-scope: the cut (lines 22-23) lies inside the { } block that declares its own %r2."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_scopes_base", _p.Path(__file__).with_name("_scopes.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE


def recipe():
    return base.make((22, 24), ["%r1"], ["%r3"])
