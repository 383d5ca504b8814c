"""Statement rewrites: one edit layer that `apply` (and anything else that edits a module)
uses to replace single statements.

A rewrite is a :class:`~rrsplice.rewrite.rules.Rule`: it matches statements (opcode,
modifiers, operand shapes), checks that the operands it consumes are what its replacement
needs, and yields replacement text plus the module-scope declarations that text requires.
:func:`plan_rewrites` runs a list of rules over a module's functions and returns a
:class:`~rrsplice.rewrite.rules.RewritePlan` (replacements, declarations, findings, counts
per kind), which :meth:`RewritePlan.edits` turns into byte edits for :mod:`rrsplice.emit`.
A :class:`~rrsplice.rewrite.rules.StatementRule` decides one statement at a time;
:class:`~rrsplice.rewrite.rules.FirstMatch` runs several in program order. The outliner's
own region rewrites (rrsplice.outline.region_rules) are such rules, planned together with the
recipe's.

Rules shipped here (recipe options):

=============  ===========================================================================
option         rule
=============  ===========================================================================
``sust``       the four surface-store shapes (``True`` or a list of kinds, see
               :data:`~rrsplice.workflow.recipe.SUST_KINDS`) become a ``{ .param ...;
               st.param ...; call d4r_sust_<kind>, (...); }`` block calling a native helper
``rz_round``   ``add.rz[.ftz].f32 D, X, S`` + ``cvt.rzi.f32.f32 R, D`` (CUDA's ``roundf``)
               becomes round-half-away-from-zero in the default rounding mode
``rewrites``   the recipe's own rules: ``dict(opcode=..., replace=TEMPLATE|FN,
               extern=TEXT, name=...)``, see :mod:`rrsplice.rewrite.user`
=============  ===========================================================================
"""

from .rules import Replacement, RewritePlan, Rule, plan_rewrites
from .rz_round import RzRoundRule
from .sust import SUST_KINDS, SustRule
from .user import user_rules

__all__ = ["Replacement", "RewritePlan", "Rule", "RzRoundRule", "SUST_KINDS", "SustRule",
           "plan_rewrites", "rules_for_recipe"]


def rules_for_recipe(rec) -> list[Rule]:
    """The rules a recipe's options ask for, in a fixed order (sust, rz_round, own rules)."""
    rules: list[Rule] = []
    if rec.sust:
        rules.append(SustRule(rec.sust))
    if rec.rz_round:
        rules.append(RzRoundRule())
    rules += user_rules(rec)
    return rules
