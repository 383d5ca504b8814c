"""Malformed: recipe() returns a key no form knows ('cutcall', a typo of cut_call)."""


def recipe():
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx", cutcall=(1535, 36893), call="{}")
