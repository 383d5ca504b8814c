"""Malformed: recipe() returns a tuple."""


def recipe():
    return ("0021-PREPASS_ENTRYPOINT_NAME.ptx", (1535, 36893))
