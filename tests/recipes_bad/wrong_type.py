"""Malformed: cut_call is a string, not (first, end)."""


def recipe():
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx", cut_call="1535-36893", call="{}",
                extern="")
