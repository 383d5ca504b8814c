"""Malformed: not valid Python."""


def recipe(:
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx")
