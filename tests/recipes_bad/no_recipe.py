"""Malformed: defines no recipe()."""

MODULE = "0021-PREPASS_ENTRYPOINT_NAME.ptx"
