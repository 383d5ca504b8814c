"""`rrsplice check`: verify a recipe against its module before anything is written.

The checks live in modules of this package, one job each: `text` (the splice text),
`report`, `target` (loading the module, finding stages), `core` (`check_recipe`, the
region and control checks), `calls` (the splice text, its calls, a second application),
`source` and `analysis` (what several checks share), `dataflow`, `scratch`, `race`, `debug`
(debug points and blocks), `legacy`, and the target profiles: `profiles` (the lint table,
`check --target ptxas|zluda`) with ZLUDA's lints in `zluda`. Everything is importable from `rrsplice.check`.

Every finding is a :class:`~rrsplice.ptx.diagnostic.Diagnostic`: a severity (``error``
fails the check, ``warning`` is suspicious but legal, ``info`` states a fact), a stable code, a
message, and where possible the statement, physical line and registers involved. The codes
are registered in `codes` (the lints' by `profiles.lint`); their table is docs/diagnostics.md,
generated from the registry.
"""


from .core import check_recipe
from .debug import DEBUG_PARAM_OFFSET, builtin_debug_block, check_point, debug_block_text
from .race import def_use_defs
from .report import SEVERITIES, CheckFailed, Diagnostic, Report, Target
from .scratch import scratch_stride, scratch_symbol
from .target import build_target, find_stage, qualify_stage, recipe_for_stage
from .text import PROBE, SpliceText, empty_arg_lists, parse_splice_text, special_operand_uses

__all__ = [
    "CheckFailed", "DEBUG_PARAM_OFFSET", "Diagnostic", "PROBE", "Report", "SEVERITIES",
    "SpliceText", "Target", "build_target", "builtin_debug_block", "check_point",
    "check_recipe", "debug_block_text", "def_use_defs", "empty_arg_lists", "find_stage",
    "parse_splice_text", "qualify_stage", "recipe_for_stage", "scratch_stride",
    "scratch_symbol", "special_operand_uses",
]
