"""scratch-race: per-thread return slots (t * 8) in smem, which every warp also uses for its
own staging (tid.z * 512 + lane * 4) inside and after the region, and no block barrier after
the scratch reads: a warp's body can overwrite another warp's staging, and a warp's epilogue
another warp's unread slot."""
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
    return base.make(slots="thread")
