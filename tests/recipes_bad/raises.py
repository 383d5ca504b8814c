"""Malformed: recipe() raises."""

A_REGS = ["%r1"]


def recipe():
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx", cut_call=(1535, 36893),
                call=A_REGS[3], extern="")
