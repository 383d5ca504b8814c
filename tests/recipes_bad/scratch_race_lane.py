"""scratch-race as a warning: the same cut with per-lane slots (%laneid * 8), the seed's
convention; whether warps collide depends on the native body, so check warns (and
scratch-warps says the warps share every slot) but does not refuse it."""
import importlib.util as _u
import pathlib as _p

_s = _u.spec_from_file_location("_race_base", _p.Path(__file__).with_name("_race.py"))
base = _u.module_from_spec(_s)
_s.loader.exec_module(base)
MODULE = base.MODULE
SCRATCH = base.SCRATCH
RET_REGS = base.RET_REGS
RET_STRIDE = base.RET_STRIDE


def recipe():
    return base.make(slots="lane")
