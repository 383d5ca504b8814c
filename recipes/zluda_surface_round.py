"""The ZLUDA statement rewrites of the surface-store/roundf fixture: every surface store
becomes a call to a native helper, every roundf idiom loses its explicit rounding mode."""

MODULE = "surface_round_sm89.ptx"


def recipe():
    return dict(file=MODULE, sust=True, rz_round=True)
