"""The codes of the core checks (the lints register theirs with :func:`profiles.lint`), one
line each: what a finding with that code says. docs/diagnostics.md is generated from the
registry (`python scripts/diagnostic_codes.py --write`)."""

from __future__ import annotations

from ..ptx.diagnostic import register_codes

CHECK_CODES = register_codes(__name__, "check", {
    "module": "which module the recipe was applied to, when it had to be looked for (info)",
    "entry": "the recipe names another entry than the one its lines fall into",
    "cut-range": "the cut's lines lie in one function body, on statement boundaries; the "
                 "`sA-sB` range they map to (info)",
    "cut-block": "the cut opens or closes a `{ }` block it does not also close/open",
    "cut-decl": "the cut removes a declaration (warning)",
    "cut-text": "`cut_check` / `delete_check` text not found on the line it names",
    "cut-scope": "the cut begins or ends inside a `{ }` block that declares registers",
    "scope-register": "a register declared in a `{ }` block is live across the region's "
                      "boundary",
    "live-in": "a register live into the region is neither passed to the call nor derivable "
               "from a passed value (error); derivable ones are listed (info)",
    "passed-unused": "a register the call text passes is not live into the region (warning)",
    "live-out": "a register live out of the region is not written back by the splice text",
    "mma-pair": "only one register of an mma `{d0, d1}` D pair is written back (the classic "
                "half pair)",
    "clobber": "the splice text writes a register whose value is live across the region",
    "call-parse": "the call (or `extern`) text does not parse",
    "extern-text": "the extern text holds more than declarations (a `.version`, `.target`, "
                   "`.address_size` or an `.entry`)",
    "splice-escapes": "the splice text closes its function's brace or opens a function or "
                      "declaration at top level",
    "call-args": "argument count or types differ from the callee's declaration; more than "
                 "one return parameter",
    "call-types": "the call text moves a vector register with a scalar opcode (or the "
                  "reverse), which ptxas rejects",
    "callee-order": "the callee is not declared before the call",
    "undeclared": "a register the splice text uses is declared neither by it nor by the "
                  "function",
    "special-operand": "a special register (`%laneid`) is an operand of an instruction other "
                       "than `mov`: ptxas rejects it, ZLUDA accepts it (warning)",
    "applied": "the callee is already declared or called: applying twice is refused",
    "label-entry": "a label inside the region is targeted from outside it",
    "branch-exit": "a branch inside the region leaves it (other than falling through)",
    "exit-dispatch": "the splice text's branches on the callee's exit index after the call "
                     "cannot be read as an exit dispatch",
    "control": "`bar`/`ret`/`exit`/`trap` inside the region (warning)",
    "divergent-call": "`call.uni` under control flow that depends on a per-lane value "
                      "(error), or the fact that the call site is uniform (info)",
    "scratch-size": "`stride x 32` bytes do not fit in the scratch array, or returns overlap",
    "scratch-warps": "the scratch address depends on `%laneid` only, but the block may run "
                     "several warps that then share every slot (warning)",
    "scratch-live": "the scratch array holds a value live across the region",
    "scratch-race": "several warps may share the scratch array and no block barrier follows "
                    "the call text's scratch reads: an error when the slots provably "
                    "overlap, else a warning",
    "shared-base": "the region names a `.shared` array whose address the call does not pass "
                   "(a separate `.func` cannot name the entry's array)",
    "scratch": "facts about the scratch array: last access before, first after (info)",
    "stage-line": "a debug stage's line does not end a statement of a function body",
    "stage-undefined": "a debug-stage register is not defined on every path to its line",
    "stage-name": "a stage name is not qualified by this recipe's layer",
    "debug-param": "no usable debug pointer: the parameter is missing, or its 8 bytes lie "
                   "past the parameter's end",
    "debug-alias": "the debug build would write through a pointer the kernel reads (error, "
                   "or a warning when the recipe says why that is fine)",
    "rewrite": "what the recipe's statement rewrites touch (counts per kind) and the "
               "statements they leave alone (info)",
    "rewrite-none": "a rewrite was asked for but matched no statement (warning)",
    "rewrite-operand": "a surface store whose operands are not what the helper takes",
    "rewrite-round": "an `add.rz` without its `cvt.rzi`, whose addend is not shown to be "
                     "`copysign(0.5, x)`, or whose sum is read elsewhere",
    "rewrite-rule": "a recipe's own rule failed or produced more than one line",
})
