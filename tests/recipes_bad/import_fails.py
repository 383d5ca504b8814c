"""Malformed: the module fails to import (a name its helper needs does not exist)."""
from os.path import no_such_function  # noqa: F401


def recipe():
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx")
