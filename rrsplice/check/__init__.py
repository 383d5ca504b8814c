"""`rrsplice check`: verify a recipe against its module before anything is written.

The checks live in modules of this package, one job each: `text` (the splice text),
`report`, `target` (loading the module, finding stages), `core` (`check_recipe`, the
region and control checks), `calls` (the splice text, its calls, a second application),
`source` and `analysis` (what several checks share), `dataflow`, `scratch`, `race`, `debug`
(debug points and blocks), `legacy`, and the target profiles: `profiles` (the lint table,
`check --target ptxas|zluda`) with ZLUDA's lints in `zluda`. Everything is importable from `rrsplice.check`.

Every finding has a severity (``error`` fails the check, ``warning`` is suspicious but legal,
``info`` states a fact), a stable code, a message, and where possible the statement, physical
line and registers involved. Codes:

==================  ==========================================================================
code                what
==================  ==========================================================================
cut-range           the cut's lines lie in one function body, on statement boundaries; the
                    ``sA-sB`` range they map to (info)
cut-block           the cut opens or closes a ``{ }`` block it does not also close/open
cut-decl            the cut removes a declaration (warning)
cut-text            ``cut_check`` / ``delete_check`` text not found on the line it names
live-in             a register live into the region that is neither passed to the call nor
                    derivable from a passed value (error); derivable ones are listed (info)
passed-unused       a register the call text passes that is not live into the region (warning)
live-out            a register live out of the region that the splice text does not write back
mma-pair            the classic half pair: only one register of an mma ``{d0, d1}`` D list is
                    written back
clobber             the splice text writes a register whose value is live across the region
call-parse          the call (or ``extern``) text does not parse
call-args           argument count or types differ from the callee's declaration; more than
                    one return parameter
callee-order        the callee is not declared before the call
empty-args          an empty ``()`` argument list (ZLUDA rejects it: an error for the zluda
                    profile, a warning for ptxas)
param-return        ``.param`` return parameters (zluda profile: a native body cannot
                    produce ZLUDA's LLVM return value; return through memory)
sust-left           zluda profile: the recipe asks for surface-store rewrites, yet a surface
                    store stays (a kind not selected, a shape not known) (warning)
explicit-rounding   zluda profile: ``.rz``/``.rm``/``.rp`` on float arithmetic the output
                    keeps (strict floating-point mode; ``rz_round=True``) (warning)
undeclared-call     a call (in the module or written by a rewrite rule) to a function not
                    declared before the calling function (zluda and ptxas: error)
undeclared          a register the splice text uses is declared neither by it nor the function
special-operand     a special register (``%laneid``) as an operand of an instruction other than
                    ``mov``: ptxas rejects it, ZLUDA accepts it (warning)
label-entry         a label inside the region is targeted from outside it
branch-exit         a branch inside the region leaves it (other than falling through)
control             ``bar``/``ret``/``exit``/``trap`` inside the region (warning)
scratch-size        ``stride x 32`` bytes do not fit in the scratch array, or returns overlap
scratch-live        the scratch array holds a value live across the region
scratch-race        the block may run several warps, the kernel also uses the scratch array,
                    and the call text has no block barrier after its scratch reads: an error
                    when the return slots provably overlap bytes other warps access (for every
                    block shape the entry allows), a warning when that cannot be proven or the
                    slots are per lane (the seed's convention)
shared-base         the region names a .shared array whose address the call does not pass
                    (a separate .func cannot name the entry's array)
scratch             facts about the scratch array: last access before, first after (info)
applied             the callee is already declared or called: applying twice is refused
entry               the recipe names another entry than the one its lines fall into
stage-line          a debug stage's line does not end a statement of a function body
stage-undefined     a debug-stage register is not defined on every path to its line
stage-name          a stage name is not qualified by this recipe's layer
rewrite             what the recipe's statement rewrites touch: counts per kind (info), and
                    statements left alone because the cut removes them (info)
rewrite-operand     a surface store whose operands are not what the helper takes (the
                    surface not a 64-bit register, a value of the wrong width)
rewrite-round       an ``add.rz`` without its ``cvt.rzi``, or whose addend is not shown to be
                    ``copysign(0.5, x)``, or whose sum is read elsewhere
rewrite-rule        a recipe's own rule failed or produced more than one line
rewrite-none        a rewrite was asked for but matched no statement (warning)
==================  ==========================================================================
"""


from .calls import _callee, _check_applied, _check_splice_text
from .core import check_recipe
from .debug import DEBUG_PARAM_OFFSET, _check_point, builtin_debug_block, debug_block_text
from .race import def_use_defs
from .report import SEVERITIES, CheckFailed, Diagnostic, Report, Target
from .scratch import _symbol_accesses, block_threads, scratch_symbol
from .source import _TYPE_SIZE, _function_decl, _line_text
from .target import _entry_function, _function_at, build_target, find_stage, qualify_stage, recipe_for_stage
from .text import PROBE, SpliceText, empty_arg_lists, parse_splice_text, special_operand_uses

# the public API, and the private helpers other rrsplice modules import from here
__all__ = [
    "CheckFailed", "DEBUG_PARAM_OFFSET", "Diagnostic", "PROBE", "Report", "SEVERITIES",
    "SpliceText", "Target", "block_threads", "build_target", "builtin_debug_block",
    "check_recipe", "debug_block_text", "def_use_defs", "empty_arg_lists", "find_stage",
    "parse_splice_text", "qualify_stage", "recipe_for_stage", "scratch_symbol",
    "special_operand_uses",
    "_TYPE_SIZE", "_callee", "_check_applied", "_check_point", "_check_splice_text",
    "_entry_function", "_function_at", "_function_decl", "_line_text", "_symbol_accesses",
]
