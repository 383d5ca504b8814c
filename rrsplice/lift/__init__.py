"""The PTX -> C++ lifter: a region's statements, one C++ statement (or a few) each, with
instruction semantics as data (`semantics`), the machine primitives and helpers in the
generated `rr_lift.h` (`header`), and the whole-region body of a recipe (`region`)."""

from __future__ import annotations

from .lower import LiftError
from .region import STAGINGS, RegionBody, lift_region

__all__ = ["LiftError", "RegionBody", "STAGINGS", "lift_region"]
