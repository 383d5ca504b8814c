"""Malformed: mixes the cut_call form with the older delete form."""


def recipe():
    return dict(file="0021-PREPASS_ENTRYPOINT_NAME.ptx", cut_call=(1535, 36893), call="{}",
                delete=(1535, 36893), insert="{}")
