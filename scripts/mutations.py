"""The mutations `scripts/mutate.py` applies, one plausible bug each.

Each is named by the exact code text it replaces (`find`, which must occur exactly once in
the module, or `occurrence=N` for the N-th of several) and the text put in its place.
`tests` overrides the module's test subset (TESTS). `equivalent` explains a mutation that
changes no observable behaviour; it is reported as such when it survives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mut:
    path: str
    id: str
    find: str
    replace: str
    why: str
    tests: tuple = ()
    equivalent: str | None = None
    occurrence: int | None = None
    # written after the tests, from the module's code and docstrings alone, without reading
    # its tests (issue 24): the score on these predicts how the suite meets a bug nobody listed
    blind: bool = False

    @property
    def area(self) -> str:
        p = self.path.removeprefix("rrsplice/")
        return p.split("/", 1)[0].removesuffix(".py")


T = "tests/"
SYNTAX = (T + "test_bites_syntax.py", T + "test_roundtrip.py", T + "test_parse_errors.py")
ANALYSIS = (T + "test_bites_analysis.py", T + "test_cfg.py", T + "test_liveness.py",
            T + "test_semantics.py", "-knot cli_liveness_default_module")
EDITS = (T + "test_bites_edits.py", T + "test_apply.py",
         "-knot scaffold_every_real and not scaffold_refuses and not cli_apply_summary")
#: module prefix -> the test files run against its mutations (fast subsets, not the suite)
TESTS = [
    ("rrsplice/ptx/parser.py", SYNTAX),
    ("rrsplice/ptx/operands.py", SYNTAX),
    ("rrsplice/ptx/lexicon.py", SYNTAX),
    ("rrsplice/ptx/model.py", SYNTAX),
    ("rrsplice/analysis/semantics.py", ANALYSIS),
    ("rrsplice/ptx/isa.py", ANALYSIS + (T + "test_bites_provenance.py", T + "test_isa_effects.py")),
    ("rrsplice/analysis/cfg.py", ANALYSIS),
    ("rrsplice/analysis/dataflow.py", ANALYSIS),
    ("rrsplice/analysis/provenance.py", (T + "test_bites_provenance.py", T + "test_provenance.py",
                                "-knot classification_cfg_fixture")),
    ("rrsplice/analysis/mma.py", (T + "test_bites_mma.py", T + "test_mma.py",
                                  T + "test_phases_chain_epilogue.py")),
    ("rrsplice/ptx/emit.py", EDITS),
    ("rrsplice/workflow/splice.py", EDITS),
    ("rrsplice/check/", (T + "test_bites_check.py", T + "test_check.py",
                         "-kfails_its_check or that_pass or scratch or bites or passed_but_not_live "
                         "or undeclared_register")),
    ("rrsplice/body/", (T + "test_body.py", T + "test_warp_harness.py",
                        "-ktiny_bodies or lanes_exchange or not every_phase")),
    ("rrsplice/workflow/align.py", (T + "test_port.py", T + "test_port_oracle.py",
                          T + "test_port_refusals.py")),
    ("rrsplice/workflow/port.py", (T + "test_port.py", T + "test_port_oracle.py",
                          T + "test_port_refusals.py")),
    ("rrsplice/fragments/fragmap.py", (T + "test_fragmap.py", T + "test_cli_fragments.py",
                             T + "test_fraglayout.py", T + "test_fraglayout_isa.py")),
    ("rrsplice/fragments/layout.py", (T + "test_fraglayout.py", T + "test_fragmap.py",
                                T + "test_fraglayout_isa.py")),
    ("rrsplice/fragments/descriptor.py", (T + "test_descriptor.py",)),
    ("rrsplice/rewrite/", (T + "test_rewrite.py", T + "test_rewrite_exec.py")),
    ("rrsplice/infra/cache.py", (T + "test_hostile_cache.py", T + "test_cache_trust.py")),
    ("rrsplice/infra/fsutil.py", (T + "test_hostile_writes.py", T + "test_hostile_inputs.py",
                            T + "test_fsutil_inputs.py")),
    ("rrsplice/analysis/regions.py", (T + "test_region_analysis.py", T + "test_bites_check.py",
                             T + "test_bites_outline.py", T + "test_loop_exits.py",
                             T + "test_outline.py")),
    ("rrsplice/lift/lanes.py", (T + "test_lift_shfl.py",)),
    ("rrsplice/lift/header.py", (T + "test_lift_shfl.py", T + "test_lift_helpers.py",
                                 T + "test_lift_hip_inline.py")),
    ("rrsplice/outline/", (T + "test_region_analysis.py", T + "test_bites_outline.py",
                           T + "test_bites_outline_paths.py",
                           T + "test_outline_oracle.py", T + "test_outline.py",
                           T + "test_outline_rules.py")),
]

P, O, S, C, D, F = ("rrsplice/ptx/parser.py", "rrsplice/ptx/operands.py", "rrsplice/analysis/semantics.py",
                    "rrsplice/analysis/cfg.py", "rrsplice/analysis/dataflow.py", "rrsplice/analysis/provenance.py")
MM, E, SP = "rrsplice/analysis/mma.py", "rrsplice/ptx/emit.py", "rrsplice/workflow/splice.py"
CC, CCALL, CSCR, CDF, CRACE, CTXT = ("rrsplice/check/core.py", "rrsplice/check/calls.py",
                                     "rrsplice/check/scratch.py", "rrsplice/check/flow.py",
                                     "rrsplice/check/race.py", "rrsplice/check/text.py")
I = "rrsplice/ptx/isa.py"
OR, OB, ORG, OCS, ODL, OCM = ("rrsplice/outline/recompute.py", "rrsplice/outline/body.py",
                              "rrsplice/outline/region.py", "rrsplice/outline/callsite.py",
                              "rrsplice/outline/delivery.py", "rrsplice/outline/common.py")
OAS, OVA, ORW = ("rrsplice/outline/assemble.py", "rrsplice/outline/values.py",
                 "rrsplice/outline/region_rules.py")
OEX = "rrsplice/outline/exit_branches.py"
RG = "rrsplice/analysis/regions.py"

MUTATIONS = [
    # ------------------------------------------------------------------ operands
    Mut(O, "operands-octal-decimal", 'return int(t, 8)   # PTX octal', 'return int(t, 10)',
        "octal integer literal read as decimal"),
    Mut(O, "operands-hex-decimal", 'return int(t, 16)', 'return int(t, 10) if t.isdigit() else int(t, 16) + 1',
        "hex literal value off by one"),
    Mut(O, "operands-binary", 'return int(t, 2)', 'return int(t, 8)',
        "binary literal read as octal"),
    Mut(O, "operands-neg-lost", 'return Negated(_reg(t2) if k2 == "reg" else Reg(t2))',
        'return _reg(t2) if k2 == "reg" else Reg(t2)',
        "`!%p` operand loses its negation"),
    Mut(O, "operands-guard-negation-lost", 'negated=bool(m.group(1)))', 'negated=False)',
        "`@!%p` guard parsed as `@%p` (fast path)", occurrence=0),
    Mut(O, "operands-guard-negation-lost-slow", 'negated=bool(m.group(1)))', 'negated=False)',
        "`@!%p` guard parsed as `@%p` (slow path)", occurrence=1),
    Mut(O, "operands-negative-imm", 'return Imm("-" + t2, -imm.value, imm.kind_name)',
        'return Imm("-" + t2, imm.value, imm.kind_name)', "negative immediate keeps its sign "
        "only in the text"),
    Mut(O, "operands-addr-offset", 'return Address(base, int(off) if off else 0)',
        'return Address(base, 0)', "fast-path address offset dropped"),
    Mut(O, "operands-scoped-base-symbol", '''            elif b in scoped_regs:
                base = Reg(b)''', '''            elif False:
                base = Reg(b)''', "a scoped register as address base read as a symbol"),
    Mut(O, "operands-predpair-first", 'return PredPair(value, self._pred())',
        'return PredPair(Sink(), self._pred())',
        "`%p|%q` loses its first register"),
    Mut(O, "operands-sink", '        elif tok == "_":\n            return Sink()',
        '        elif tok == "_":\n            return Symbol("_")',
        "`_` sink read as a symbol"),
    Mut(O, "operands-vector-fast", 'return Vector(tuple(items))', 'return Vector(tuple(items[:1]))',
        "fast-path brace list keeps only its first register"),
    Mut(O, "operands-int-fast", 'return Imm(piece, int(piece), "int")',
        'return Imm(piece, abs(int(piece)), "int")', "fast-path negative integer sign lost"),
    Mut(O, "operands-after-semicolon", '''        if self.i != len(self.toks):
            kind, tok, off = self.toks[self.i]''', '''        if False:
            kind, tok, off = self.toks[self.i]''', "text after ';' accepted",
        equivalent="the statement grammar ends an instruction at its first ';', so the operand parser never "
        "receives text after it (the grammar reports it instead)"),
    Mut(O, "operands-missing-semicolon-hint", 'if tok and "\\n" in self.text[prev_end:off]:',
        'if False:', "missing ';' on the previous line not diagnosed as such"),
    # ------------------------------------------------------------------ parser
    Mut(P, "parser-octal-decl", 'return -_int_value(t[1:]) if t.startswith("-") else _int_value(t)',
        'return int(t) if t.isdigit() else (-_int_value(t[1:]) if t.startswith("-") else _int_value(t))',
        "octal literal in a declaration read as decimal"),
    Mut(P, "parser-version-first", 'if not module.headers or module.headers[0][0] != ".version":',
        'if not module.headers:', "a module not starting with .version accepted"),
    Mut(P, "parser-empty-module", 'if not text.strip():', 'if False:',
        "empty module not diagnosed"),
    Mut(P, "parser-block-depth", 'item.depth = depth + 1', 'item.depth = depth',
        "nested block depth not increased"),
    Mut(P, "parser-branchtargets", 'if word != ".callprototype":', 'if word == ".callprototype":',
        "`.branchtargets` lists dropped, `.callprototype` read as targets"),
    Mut(P, "parser-dims", '''        dims = tuple(_int_lit(d) if d else None
                     for d in re.findall''', '''        dims = () and tuple(_int_lit(d) if d else None
                     for d in re.findall''', "scoped-block array dimensions dropped"),
    Mut(P, "parser-dims-octal", 'dims = tuple(_int_lit(d) if d else None', 'dims = tuple(int(d) if d else None',
        "scoped-block array dimension `[010]` read as decimal"),
    # ------------------------------------------------------------------ semantics
    Mut(S, "semantics-guard-no-use", 'uses.extend(defs)    # a guarded write may not happen: the old value survives',
        'pass', "a guarded definition does not keep the old value live"),
    Mut(S, "semantics-guard-kills",
        '''        uses.extend(defs)    # a guarded write may not happen: the old value survives
        kills_ok = False''',
        '''        uses.extend(defs)    # a guarded write may not happen: the old value survives''',
        "a guarded definition kills"),
    Mut(S, "semantics-guard-reg-not-used", 'uses.insert(0, g.key)',
        'pass',
        "the guard predicate is not a use"),
    Mut(S, "semantics-address-def", 'if role == "U" or type(op) is Address:', 'if role == "U":',
        "registers inside a destination address counted as definitions"),
    Mut(I, "semantics-mad-accumulator", 'mad          integer           D U*     pure int addr',
        'madx         integer           D U*     pure',
        "`mad` missing from the table (analysed conservatively)"),
    Mut(I, "semantics-st-def", 'st           data              U*       write\n',
        'stx          data              U*       write\n',
        "`st` not in the table: its first operand's registers become definitions"),
    Mut(I, "semantics-atom-use", 'atom         sync              D U*     atomic',
        'atom         sync              U*       atomic',
        "`atom` result treated as a read"),
    Mut(S, "semantics-carry-read", 'uses.append(CARRY)', 'pass',
        "`addc` does not read the carry flag"),
    Mut(S, "semantics-carry-write", 'defs.append(CARRY)', 'pass',
        "`.cc` arithmetic does not write the carry flag"),
    Mut(S, "semantics-partial-param", 'if not whole:    # a partial write keeps (so reads) the rest',
        'if False:', "a partial .param store kills the whole slot"),
    Mut(S, "semantics-call-ret-defs", '''            if p is not None:
                defs.append(p)
            else:
                _regs(item, defs)''', '''            if p is not None:
                uses.append(p)
            else:
                _regs(item, uses)''', "a call's return list read instead of written"),
    Mut(S, "semantics-call-args-use", '''            if p is not None:
                uses.append(p)
            else:
                _regs(item, uses)
        i += 1''', '''            pass
        i += 1''', "a call's arguments not read"),
    Mut(S, "semantics-unknown-first-def", 'if i == 0 and not isinstance(op, Address):',
        'if False:', "an unknown opcode's destination not a definition"),
    Mut(S, "semantics-unknown-kills", '''            covered = False
            kills_ok = False''', '''            covered = False''',
        "an unknown opcode's first operand killed (not conservative)"),
    Mut(S, "semantics-star-repeat", 'rest = letter[0]', 'rest = "U"',
        "a repeated role (`D*`) applies only once",
        equivalent='every starred role in the table is `U*` (D U*, U*, M U*), so repeating `U` instead of the '
        'starred letter changes nothing'),
    Mut(S, "semantics-pseudo", 'return ":" in name', 'return name.startswith("param:")',
        "`cc:CF` not recognised as a pseudo-register"),
    Mut(S, "semantics-sort-numeric",
        'return (is_pseudo(name), tuple(int(p) if i % 2 else p for i, p in enumerate(parts)))',
        'return (is_pseudo(name), name)', "registers sorted as text (%r10 before %r2)"),
    Mut(I, "semantics-terminator-ret", 'ret          control           U*       term',
        'ret          control           U*',
        "`ret` does not end a block"),
    Mut(S, "semantics-block-barrier-guard", 'if st.base not in ("bar", "barrier") or st.guard:',
        'if st.base not in ("bar", "barrier"):', "a guarded bar.sync counted as a block barrier"),
    Mut(S, "semantics-block-barrier-partial", 'return whole and len(st.operands) <= 1',
        'return whole', "`bar.sync 1, 64` counted as a whole-block barrier"),
    Mut(I, "semantics-family-longest", 'for n in range(min(len(parts), 5), 0, -1):',
        'for n in range(1, min(len(parts), 5) + 1):',
        "opcode family: shortest prefix wins "
        "(`bar.red` read as `bar`)"),
    Mut(S, "semantics-vector-def",
        '            if type(item) is Reg:\n                if not item.special:\n'
        '                    out.append(item.ident or item.name)',
        '            if type(item) is Reg:\n                if not item.special and not out:\n'
        '                    out.append(item.ident or item.name)',
        "only the first register of a brace list collected"),
    Mut(S, "semantics-special", '''    if t is Reg:
        if not op.special:''', '''    if t is Reg:
        if True:''', "special registers collected as variables"),
    # ------------------------------------------------------------------ cfg
    Mut(C, "cfg-stmt-succs-wrong", 'return [self.blocks[s].first for s in b.succs]',
        'return [self.blocks[s].last for s in b.succs]', "stmt_succs returns the wrong "
        "successor (last statement of the successor block)"),
    Mut(C, "cfg-stmt-succs-inner", '''        if index < b.last:
            return [index + 1]''', '''        if index < b.last:
            return [index + 2]''', "stmt_succs skips a statement inside a block"),
    Mut(C, "cfg-stmt-preds", 'return [self.blocks[p].last for p in b.preds]',
        'return [self.blocks[p].first for p in b.preds]', "stmt_preds returns a predecessor "
        "block's first statement"),
    Mut(C, "cfg-guarded-falls", 'falls = st.guard is not None', 'falls = False',
        "a guarded branch never falls through"),
    Mut(C, "cfg-unguarded-falls", 'falls = st.guard is not None', 'falls = True',
        "an unguarded branch or ret falls through"),
    Mut(C, "cfg-label-leader", '''        if st.is_label:
            leader[st.index] = True''', '''        if st.is_label:
            pass''',
        "a label does not start a block"),
    Mut(C, "cfg-after-terminator-leader", 'leader[st.index + 1] = True', 'pass',
        "the statement after a branch does not start a block"),
    Mut(C, "cfg-brx-targets", '''                        if lab is not None:
                            succ_stmts.append(lab.index)
                        else:''', '''                        if lab is not None:
                            break
                        else:''', "brx.idx reaches none of its table's labels"),
    Mut(C, "cfg-unresolved", 'unresolved.append((st.index, target))', 'pass',
        "a branch to an undefined label not reported"),
    Mut(C, "cfg-preds-missing", 'blocks[sb].preds.append(b.id)', 'pass',
        "predecessor lists left empty"),
    Mut(C, "cfg-rpo-unreachable", 'order.extend(i for i, s in enumerate(seen) if not s)',
        'pass', "unreachable blocks missing from the block order"),
    Mut(C, "cfg-exits", 'return [b for b in self.blocks if not b.succs]',
        'return [b for b in self.blocks if len(b.succs) <= 1]', "blocks with one successor "
        "counted as exits"),
    # ------------------------------------------------------------------ dataflow
    Mut(D, "dataflow-pseudo-leak", '''        if not pseudo:
            names = [n for n in names if not is_pseudo(n)]''', '''        if False:
            names = [n for n in names if not is_pseudo(n)]''',
        "pseudo-registers (`param:`, `cc:CF`) leak into register lists"),
    Mut(D, "dataflow-no-kill", 'new_in = gen[bid] | (out & ~kill[bid])', 'new_in = gen[bid] | out',
        "definitions do not kill liveness"),
    Mut(D, "dataflow-gen-order", '''            if d.kills:
                gen.difference_update(d.kills)
                kill.update(d.kills)
            if d.uses:
                gen.update(d.uses)''', '''            if d.uses:
                gen.update(d.uses)
            if d.kills:
                gen.difference_update(d.kills)
                kill.update(d.kills)''', "`add %r1, %r1, 1` kills before it reads"),
    Mut(D, "dataflow-live-in-uses", '''        live.difference_update(d.kills)
        live.update(d.uses)''', '''        live.difference_update(d.kills)''',
        "live_in_at forgets the statement's own uses"),
    Mut(D, "dataflow-live-in-kills", '''        live.difference_update(d.kills)
        live.update(d.uses)''', '''        live.update(d.uses)''',
        "live_in_at keeps what the statement kills"),
    Mut(D, "dataflow-reach-kill", '''                if reg in du[s - 1].kills:
                    killed = True
                    break''', '''                if False:
                    killed = True
                    break''', "reaching definitions pass through killing definitions"),
    Mut(D, "dataflow-reach-entry", '''            if bid == 0:
                from_entry = True''', '''            if bid == -1:
                from_entry = True''', "reaches_from_entry always False"),
    Mut(D, "dataflow-range-entry-lo",
        'if lo > b.first or lo == 1 or any(not a <= blocks[p].last <= z for p in b.preds):',
        'if lo > b.first or lo == 1:', "a branch into the range from outside not an entry"),
    Mut(D, "dataflow-range-exit-fall", '''            if hi < b.last:
                exits.append(hi + 1)''', '''            if hi < b.last:
                pass''', "a range ending inside a block has no exit"),
    Mut(D, "dataflow-live-out-defs", 'm |= dout[k] & lm', 'm |= lm',
        "range live-out includes registers the range does not define"),
    Mut(D, "dataflow-defs-at-exits-flow", '''            for p in preds[k]:
                m |= out[p]''', '''            for p in preds[k][:0]:
                m |= out[p]''', "definitions do not flow along the range's edges"),
    Mut(D, "dataflow-through-boundary", 'm = cache[t] = self.mask(self.live_in_at(t))',
        'm = cache[t] = 0', "range live-through ignores what is live at the exits",
        occurrence=0),
    Mut(D, "dataflow-pass-in-for-out", 'return [r for r in self.range_live_through(rng, pseudo=pseudo) if r in out]',
        'return [r for r in self.range_live_in(rng, pseudo=pseudo) if r in out]',
        "pass-in-for-out uses live-in instead of live-through"),
    Mut(D, "dataflow-first-uses", 'if reg in d.uses:', 'if reg in d.uses or reg in d.defs:',
        "first_uses_after reports a redefinition as a use"),
    Mut(D, "dataflow-check-index", 'if not 1 <= index <= len(self.du):',
        'if not 0 <= index <= len(self.du):', "statement index 0 accepted"),
    # ------------------------------------------------------------------ provenance
    Mut(F, "provenance-sub", 'return _mk_int(ka[1] - kb[1], ka[2] + kb[2])',
        'return _mk_int(ka[1] + kb[1], ka[2] + kb[2])', "difference of offsets added"),
    Mut(I, "provenance-shl",
        'def _shl(x: int, y: int) -> int:\n    if y < 0:\n        raise ValueError("shift by a negative count")\n'
        '    return x << y',
        'def _shl(x: int, y: int) -> int:\n    if y < 0:\n        raise ValueError("shift by a negative count")\n'
        '    return x * y',
        "shl computed as a product"),
    Mut(I, "provenance-shr", '    return x >> y',
        '    return x << y',
        "shr computed as shl"),
    Mut(F, "provenance-mul-hi", 'if base in ("mul", "mad") and "hi" in mods:',
        'if False:',
        "mul.hi treated as mul.lo"),
    Mut(F, "provenance-add-cc", '''            if "cc" in mods:
                return Unknown("add with carry")''', '''            if False:
                return Unknown("add with carry")''', "add.cc folded as a plain add"),
    Mut(F, "provenance-mad", 'return _add(_binop(a, b, INT_EVAL["mul"]), src[2])',
        'return _binop(a, b, INT_EVAL["mul"])',
        "mad drops its addend"),
    Mut(F, "provenance-neg", 'return _binop(Const(0), src[0], INT_EVAL["sub"])',
        'return src[0]',
        "neg drops the sign"),
    Mut(F, "provenance-load-offset", 'off += addr.offset', 'pass',
        "a load's address offset ignored"),
    Mut(F, "provenance-param-element", 'return Param(root.name, off + width * idx)',
        'return Param(root.name, off)', "vector param load elements share one offset"),
    Mut(F, "provenance-cvt-float", '''                return Unknown("floating-point conversion")
            return src[0]''', '''                return src[0]
            return src[0]''', "float conversion folded as an integer copy"),
    Mut(I, "provenance-and", '"and": lambda a, b: a & b',
        '"and": lambda a, b: a | b',
        "and computed as or"),
    Mut(I, "provenance-xor", '"xor": lambda a, b: a ^ b',
        '"xor": lambda a, b: a | b',
        "xor computed as or"),
    Mut(F, "provenance-weight", '''                if self.is_weight(root):
                    return shift(WeightImage(), off, dyn)''', '''                if False:
                    return shift(WeightImage(), off, dyn)''', "cvta.to.global of the weight "
        "pointer not recognised"),
    # ------------------------------------------------------------------ mma
    Mut(MM, "mma-two-types", 'd_t, a_t, b_t, c_t = types[0], types[1], types[1], types[0]',
        'd_t, a_t, b_t, c_t = types[0], types[0], types[1], types[1]',
        "a two-type mma assigns A/C the wrong types"),
    Mut(MM, "mma-shape-first", 'if mm and not shape:', 'if mm:',
        "a later shape-like modifier overrides the shape",
        equivalent="an mma opcode names exactly one `mMnNkK` shape, so the first shape-like "
        "modifier is also the last"),
    Mut(MM, "mma-operands", 'c=_regs_of(ops[3])', 'c=_regs_of(ops[0])',
        "C operand read from the D position"),
    Mut(MM, "mma-b-operand", 'b=_regs_of(ops[2])', 'b=_regs_of(ops[1])',
        "B operand read from the A position"),
    Mut(MM, "mma-guarded", 'guarded=st.guard is not None)', 'guarded=False)',
        "a guarded mma reported as unguarded"),
    Mut(MM, "mma-family-space", 'return base if space == "generic" else f"{base}.{space}"',
        'return base',
        "gap summaries lose the memory's state space"),
    Mut(MM, "mma-gap", 'if b.first - 1 >= a.last + 1:', 'if b.first - 1 > a.last + 1:',
        "a one-statement gap between phases is lost"),
    Mut(MM, "mma-chain-cut", 'if sc.phase_of[idx] != sc.phase_of[cur[-1]]:', 'if False:',
        "an accumulator chain spans phases"),
    Mut(MM, "mma-k-slices", 'k_slices = max(lengths) if lengths else 0',
        'k_slices = min(lengths) if lengths else 0', "k-slices from the shortest chain"),
    # an epilogue read of finished chains (docs/phases.md, "Finished chains")
    Mut(MM, "mma-finished-chains-split", 'or not (continues or gemm.same(mm, seed))',
        'or True', "the rule off: every epilogue read splits the phase, so an early "
        "conversion of a finished tile cuts its GEMM into one phase per tile"),
    Mut(MM, "mma-epilogue-taint-direct", 'tainted = j in self.roots or not epi.isdisjoint(uses)',
        'tainted = j in self.roots', "only the statements reading an accumulator count as the "
        "epilogue: a next GEMM fed two statements later joins the phase"),
    Mut(MM, "mma-epilogue-memory", 'self.mem_dirty = True', 'self.mem_dirty = False',
        "an epilogue's stores are forgotten: a GEMM loading what it wrote joins the phase"),
    Mut(MM, "mma-epilogue-guard",
        'guard = (st.guard.reg.key,) if st.guard is not None else ()', 'guard = ()',
        "an mma guarded by a predicate the epilogue computed joins the phase"),
    Mut(MM, "mma-read-chain-continues", 'if (not consumed.isdisjoint(owners)', 'if (False',
        "a chain the epilogue read goes on in the same phase"),
    Mut(MM, "mma-gemm-b-source",
        'and (shares_b or self._source(mm.index, mm.b) in self.b_src))', 'and True)',
        "B from other weights (a pointer the phase never read) is the same GEMM"),
    Mut(MM, "mma-gemm-shares",
        'if not (shares_a or shares_b or (seed and mm.c and self._key(mm.index, mm.c) in self.c)):',
        'if False:', "an mma sharing no fragment or seed with the phase is the same GEMM"),
    # ------------------------------------------------------------------ emit
    Mut(E, "emit-overlap-one-byte", 'if a < pos:\n            raise RRSpliceError(f"overlapping edits',
        'if a < pos - 1:\n            raise RRSpliceError(f"overlapping edits',
        "a one-byte overlap between edits not detected"),
    Mut(E, "emit-reversed-span", 'if b < a or b > end:',
        'if b > end:',
        "a reversed edit span not rejected"),
    Mut(E, "emit-past-end", 'if b < a or b > end:',
        'if b < a:',
        "an edit past the end of the file not rejected"),
    Mut(E, "emit-order", 'for sp in sorted(spans, key=lambda x: (x[0], x[1])):',
        'for sp in spans:',
        "edits applied in the order given, not by position"),
    Mut(E, "emit-tail", '    out.append(source[pos:end])\n    return source[:0].join(out)',
        '    return source[:0].join(out)',
        "the text after the last edit dropped"),
    Mut(E, "emit-line-offsets-end", '''    if offs[-1] != len(data):
        offs.append(len(data))''', '''    pass''', "a file without a final newline loses its "
        "end-of-file offset"),
    Mut(E, "emit-newline-crlf", 'return b"\\r\\n" if first > 0 and data[first - 1:first] == b"\\r" else b"\\n"',
        'return b"\\n"', "CRLF files get LF insertions"),
    # ------------------------------------------------------------------ splice
    Mut(SP, "splice-same-file", '''    if same_file(Path(path), dest):
        raise ApplyError''', '''    if False:
        raise ApplyError''', "writing over the input module allowed"),
    Mut(SP, "splice-check-failed", '''    if check and not report.ok:
        raise CheckFailed(report)''', '''    if False:
        raise CheckFailed(report)''', "a recipe failing its checks is applied"),
    Mut(SP, "splice-region-end", 'return [Edit(c.line_start(a), c.line_start(last + 1),',
        'return [Edit(c.line_start(a), c.line_start(last),',
        "the cut keeps its last line"),
    Mut(SP, "splice-point-after",
        '    text = debug_block_text(t.recipe, t, t.fn)\n    pos, prefix = c.after(t.first_line)',
        '    text = debug_block_text(t.recipe, t, t.fn)\n    pos, prefix = c.after(t.first_line - 1)',
        "a debug block inserted before its line "
        "instead of after"),
    Mut(SP, "splice-truncate-keeps", 'return [Edit(pos, len(c.data), prefix + _nl(t.text, c.nl),',
        'return [Edit(pos, pos, prefix + _nl(t.text, c.nl),',
        "truncate keeps the rest "
        "of the file"),
    Mut(SP, "splice-extern-before",
        '        pos = c.line_start(fn.line)\n'
        '        edits.append(Edit(pos, pos, _nl(_with_newline(target.extern), c.nl) + c.nl,',
        '        pos = len(c.data)\n'
        '        edits.append(Edit(pos, pos, _nl(_with_newline(target.extern), c.nl) + c.nl,',
        "the extern declaration written after the function that calls it"),
    Mut(SP, "splice-body-braces", 's, e = c.m.byte_offset(b.start) + 1, c.m.byte_offset(b.end) - 1',
        's, e = c.m.byte_offset(b.start), c.m.byte_offset(b.end)',
        "replace_body drops the body's "
        "braces"),
    Mut(SP, "splice-nl", '''    if nl != b"\\n":''', '''    if False:''', "inserted text keeps LF in a CRLF file"),
    # ------------------------------------------------------------------ check
    Mut(RG, "check-branch-exit-backward", 'if dst == self.rng.last + 1:',
        'if dst <= self.rng.last + 1:',
        "a backward branch leaving the cut not reported (branch-exit)"),
    Mut(CC, "check-branch-exit", '''            rep.add("error", "branch-exit"''',
        '''            rep.add("info", "branch-exit"''',
        "a branch leaving the cut only an info"),
    Mut(CC, "check-brace-dip", 'if depth != 0 or low < 0:', 'if depth != 0:',
        "a cut `} ... {` (balanced overall, dipping below zero) accepted"),
    Mut(CC, "check-brace-balance", 'if depth != 0 or low < 0:', 'if low < 0:',
        "a cut opening a block it does not close accepted"),
    Mut(CC, "check-label-entry", 'elif e.kind == "side":', 'elif e.kind == "side" and False:',
        "a branch into the cut from outside not reported"),
    Mut(RG, "region-head-entry", 'elif lab.is_label and lab.label in self._labels_of(src):',
        'elif False:', "a branch to the cut's head label taken for control running into it"),
    Mut(RG, "region-table-labels", 'for t in tables.get(op.name, ())]', 'for t in ()]',
        "a branch table's labels not among those its brx branches to"),
    Mut(RG, "region-dispatch", 'if to.is_label and to.label in self.dispatched:',
        'if False:', "an exit the splice text dispatches to reported as stray"),
    Mut(RG, "region-unreached-extra", 'if extra and _reaches(subs, returns):', 'if extra:',
        "a read-back register the region never writes needed even where no path returns"),
    Mut(CC, "check-past-end", '''    if last > nlines:
        rep.add(''', '''    if last > nlines + 1:
        rep.add(''', "a cut one line past the end of the module not reported"),
    Mut(CC, "check-inside-body", 'if not (body.line < first and last < body.end_line):',
        'if not (body.line <= first and last <= body.end_line):',
        "a cut including the body's braces accepted"),
    Mut(CC, "check-control-ret", 'if st.base in ("bar", "barrier", "ret", "exit", "trap"):',
        'if st.base in ("bar", "barrier", "exit", "trap"):', "a `ret` inside the cut not "
        "warned about"),
    Mut(CC, "check-delete-check", 'if want is not None and want.strip() not in _line_text(m, ln):',
        'if False:', "delete_check text mismatch accepted"),
    Mut(CCALL, "check-call-args-fewer", 'if n_args != len(params):', 'if n_args > len(params):',
        "too few call arguments accepted"),
    Mut(CCALL, "check-call-args-more", 'if n_args != len(params):', 'if n_args < len(params):',
        "too many call arguments accepted"),
    Mut(CCALL, "check-call-rets", 'if n_rets != len(decl.ret_params):', 'if False:',
        "a wrong number of return values accepted"),
    Mut(CCALL, "check-callee-order", 'if decl.line > fn.line:', 'if decl.line > fn.end_line:',
        "a callee declared after its caller accepted",
        equivalent="a module-scope declaration cannot lie inside the caller's body, so one "
                   "after the caller's first line is also after its last"),
    Mut("rrsplice/check/zluda.py", "check-empty-args", '        for ln in empty_arg_lists(text):\n            what = ',
        '        for ln in empty_arg_lists(text)[:0]:\n            what = ',
        "an empty `()` argument list accepted"),
    Mut(CCALL, "check-undeclared", '''            if register_decl(fn, r) is None:
                undeclared.append((st, r))
                in_undeclared.add((id(st), r))
            elif r not in in_returned and r not in in_passed:''', '''            if False:
                undeclared.append((st, r))
                in_undeclared.add((id(st), r))
            elif r not in in_returned and r not in in_passed:''', "an undeclared register the "
        "text reads accepted"),
    Mut("rrsplice/analysis/provenance.py", "check-scratch-atomic",
        'kinds = {"read": "read", "write": "write", "atomic": "both"}',
        'kinds = {"read": "read", "write": "write", "atomic": "write"}',
        "an atomic first access after the region downgrades scratch-live to a warning",
        tests=(T + "test_bites_check.py", T + "test_check.py", "-kscratch")),
    Mut(CSCR, "check-scratch-live-first-write", 'if first_after_kind != "write":', 'if True:',
        "a write first after the region still an error"),
    Mut(CSCR, "check-scratch-live-read", 'read_after = [i for i, k in after if k != "write"]',
        'read_after = [i for i, k in after if k == "read"]', "atomics after the region not "
        "counted as reads"),
    Mut(CSCR, "check-scratch-size", 'if hi > stride:', 'if hi > stride + 4:',
        "a lane slot overlapping the next by 4 bytes accepted"),
    Mut(CDF, "check-live-in-severity", 'sev = "error" if rep.recipe.form == "cut_call" else "warning"',
        'sev = "warning"', "a live-in register the call does not pass only a warning"),
    Mut(CDF, "check-clobber", 'clob = [r for r in extra if r in after]', 'clob = []',
        "a call text overwriting a register read later accepted"),
    Mut(CDF, "check-passed-unused", 'unused = [r for r in passed if r not in live_in_set]',
        'unused = []', "passed registers that are not live-in not reported"),
    Mut(CRACE, "check-race-threads", 'if not loads or (threads is not None and threads <= 32):',
        'if not loads or (threads is not None and threads <= 1024):',
        "the scratch race check skipped for multi-warp blocks"),
    Mut(CC, "check-strip-comments", '    clean = blank_comments(_region_text(m, first, last))',
        '    clean = _region_text(m, first, last)',
        "braces inside comments counted"),
    # ------------------------------------------------------------------ outline
    Mut(OR, "outline-ld-any-reloadable",
        'return st.base == "ld" and ("nc" in mods or "const" in mods)', 'return st.base == "ld"',
        "any `ld` (plain global, shared) treated as reloadable"),
    Mut(OR, "outline-ld-shared-reloadable",
        'return st.base == "ld" and ("nc" in mods or "const" in mods)',
        'return st.base == "ld" and ("nc" in mods or "const" in mods or "shared" in mods)',
        "`ld.shared` treated as reloadable"),
    Mut(OR, "outline-ldu-not-reloadable", '''    if st.base == "ldu":
        return True''', '''    if st.base == "ldu":
        return False''', "`ldu` refused as a reloadable load"),
    Mut(OR, "outline-source-redefined", 'if reach.at(d.index, u) != reach.at(at, u):',
        'if False:', "a source register redefined between its definition and the region "
        "ignored"),
    Mut(OR, "outline-codef-clobber", 'if other != reg and other in needs and reach.at(at, other) != (d.index,):',
        'if False:', "a recomputation clobbering a co-defined register the region needs"),
    Mut(OR, "outline-guarded-def", '''        if d.guard is not None:
            why = f"its definition {d.sid} (line {d.line}) is guarded"''', '''        if False:
            why = f"its definition {d.sid} (line {d.line}) is guarded"''',
        "a guarded definition recomputed as if unconditional"),
    Mut(OR, "outline-multi-defs", 'elif len(defs) > 1:', 'elif len(defs) > 99:',
        "several reaching definitions: the first one recomputed"),
    Mut(OR, "outline-impure", 'elif not (d.base in PURE or _is_reloadable(d)):', 'elif False:',
        "an impure definition (atom, ld.global) recomputed"),
    Mut(OR, "outline-pseudo-source", '''                if is_pseudo(u):
                    why = f"its definition {d.sid} reads {u}"
                    break''', '''                if False:
                    why = f"its definition {d.sid} reads {u}"
                    break''', "a definition reading the carry flag recomputed",
        equivalent='no opcode in the recomputable set reads a pseudo-register: the carry readers (addc, subc, '
        'madc) and the .param readers (ld.param, call) are refused earlier as impure'),
    Mut(OR, "outline-passed-source-recomputed", '''                if u in passed:
                    continue''', '''                if False:
                    continue''', "a passed source recomputed instead of taken from the call"),
    Mut(OR, "outline-param-guarded", 'if d.base == "ld" and "param" in d.modifiers and d.guard is None:',
        'if d.base == "ld" and "param" in d.modifiers:', "a guarded parameter read matched "
        "as the passed value"),
    Mut(OR, "outline-value-key-sources", '''    return (str(st.guard) if st.guard else "", st.opcode,
            tuple(str(o) for o in st.operands[1:]), pos)''',
        '''    return (str(st.guard) if st.guard else "", st.opcode,
            tuple(str(o) for o in st.operands[1:2]), pos)''', "parameter reads matched on the "
        "first source only",
        equivalent='a kernel-parameter read (`ld.param`) has exactly one source operand, so the first source is '
        'all of them'),
    Mut(OB, "outline-reload-overwritten", 'if set(regs) & defs]', 'if False]',
        "parameters overwritten by recomputation not reloaded"),
    Mut(OAS, "outline-reload-late", '''            if reloads[st.index]:
                out.append("\\t// parameters the statement above overwrote")
                out.extend(reloads[st.index])''', '''        for st in recompute_sts:
            if reloads[st.index]:
                out.append("\\t// parameters the statement above overwrote")
                out.extend(reloads[st.index])''', "overwritten parameters reloaded only after "
        "all recomputation (a later recomputation reads the clobbered value)"),
    Mut(OVA, "outline-snapshot",
        '''        return reg if not _kernel_side(self.site, reg) or not self.kernel_types(reg) and \\
            self.call_types(reg) else self.snapshot(reg)''', '''        return reg''',
        "a passed register the region overwrites used instead of its snapshot"),
    Mut(OEX, "outline-exit-not-retargeted",
        'return self.plan is not None and st.index in self.plan.retarget', 'return False',
        "a branch out of the region keeps its outside label in the body"),
    Mut(OEX, "outline-exit-refusal-first", '''            self.error = exc
            return''', '''            raise''',
        "an exit refusal reported before the recipe rules' errors"),
    Mut(OB, "outline-direct-argument", 'elif isinstance(pv.value, Reg) and p.type and not p.dims:',
        'elif False:', "a register passed directly as a call argument never loaded"),
    Mut(OB, "outline-param-load-offset", 'loads.append((f"\\t{op} {pv.value}, [{p.name}+{pv.offset}];", regs))',
        'loads.append((f"\\t{op} {pv.value}, [{p.name}+0];", regs))', "parameter loads ignore "
        "the offset"),
    Mut(OB, "outline-recompute-order", 'recompute_sts = [fn.statement(i) for i in sorted(recompute_idx)]',
        'recompute_sts = [fn.statement(i) for i in sorted(recompute_idx, reverse=True)]',
        "recomputed statements copied in reverse order"),
    Mut(OB, "outline-scoped-skip", 'if is_scoped(reg) or reg in scoped_names and not kernel_types(reg):',
        'if is_scoped(reg) or reg in scoped_names:',
        "a kernel register shadowed by a scoped name never recomputed"),
    Mut(ORW, "outline-sym-width", 'width = 64 if (_type_width(st) == 64 and not _in_address(st, sym)) else 32',
        'width = 32', "a 64-bit use of a .shared array's address given the 32-bit register"),
    Mut(ORW, "outline-kernel-param-address", '''            if sym in self.kernel_params:
                raise OutlineError''', '''            if sym in self.kernel_params and False:
                raise OutlineError''', "taking a kernel parameter's address accepted"),
    Mut(ORW, "outline-shared-unpassed", '''        if sym not in self.ctx.values.sym_regs:
            raise OutlineError(''', '''        if sym not in self.ctx.values.sym_regs and False:
            raise OutlineError(''', "a .shared array the call does not pass accepted"),
    Mut("rrsplice/ptx/scopes.py", "scopes-special-declared",
        '''    elif _shadows_special(d):
        shadow = shadow + ((d.name, d.count, ""),)''',
        '''    elif False:
        shadow = shadow + ((d.name, d.count, ""),)''',
        "a body-level .reg with a special register's name stays machine state",
        tests=(T + "test_declarations.py",)),
    Mut("rrsplice/ptx/scopes.py", "scopes-special-range",
        'return _SPECIAL_RANGE_PREFIX.match(d.name) is not None', 'return False',
        "`.reg .b32 %envreg<40>` declares no special name", tests=(T + "test_declarations.py",)),
    Mut(P, "scopes-declaration-point", '''        for item in blk.items:
            kind = type(item)''', '''        for item in sorted(blk.items, key=lambda i: type(i) is not Decl):
            kind = type(item)''', "a block's declaration binds the names used before it",
        tests=(T + "test_declarations.py", T + "test_scopes.py")),
    Mut(OCS, "outline-pred-passed", 'pv.value, pv.pred = p, True', 'pass',
        "a predicate passed as 1/0 not recognised", tests=(T + "test_cut_values.py",)),
    Mut(OCS, "outline-pred-readback", 'rb.registers, rb.pred = [p.name], True', 'pass',
        "a predicate read back as 1/0 not recognised", tests=(T + "test_cut_values.py",)),
    Mut(CCALL, "check-vector-move", 'if want != have:', 'if False:',
        "a vector register moved as a scalar accepted", tests=(T + "test_cut_values.py",)),
    Mut("rrsplice/workflow/scaffold_plan.py", "scaffold-vector-type",
        'return f"{vec}{elem}" if vec in (".v2", ".v4") else elem',
        'return elem', "recipe new moves a vector register as one .b32",
        tests=(T + "test_cut_values.py",)),
    Mut(ORG, "outline-branch-out", 'if name is None or name in exit_labels:',
        'if True:', "a branch out of the region accepted"),
    Mut(ORG, "outline-second-entry", 'for e in sorted(region.entries_of("side"),',
        'for e in sorted([],', "a branch into the region from outside accepted"),
    Mut(ORG, "outline-brx", 'for i in region.indirect:', 'for i in []:',
        "an indirect branch in the region accepted"),
    Mut(RG, "outline-needs-exit", 'lambda t: exit_mask if returns(t) else 0)',
        'lambda t: 0)', "values read back after the call not needed on entry when the "
        "region may not write them"),
    Mut(RG, "outline-needs-entry", 'needs = {n for n in fa.names_of(live[0]) if not is_pseudo(n)}',
        'needs = {n for n in fa.names_of(live[-1]) if not is_pseudo(n)}',
        "the body's needs taken at the region's last block instead of its first"),
    Mut(ORG, "outline-shared-line", 'if start <= st.start < end or start < st.end <= end:',
        'if False:', "a statement sharing a line with the region copied along"),
    Mut(ORG, "outline-block-cut", '''        if not (inside or outside or encloses):
            raise OutlineError''', '''        if False:
            raise OutlineError''', "a region cutting a { } block accepted"),
    Mut(OCM, "outline-width-pred", '_WIDTH = {name: t.bits for name, t in TYPES.items()}',
        '_WIDTH = {name: 32 if name == "pred" else t.bits for name, t in TYPES.items()}',
        "predicates copied as "
        "32-bit values",
        equivalent="a register's width decides only how a passed register is snapshot (a "
        ".shared array's address, a kernel-parameter copy, a read-back address input) and the "
        "`mov` that replaces a region's `ld.param`; none can be a predicate in PTX that "
        "assembles: `st.param` and `ld` have no `.pred` type and ptxas refuses a predicate "
        "argument to a .func ('passing predicate, 8-bit and 16-bit parameters to device "
        "functions is not supported'). The read-back registers' widths are only checked for a "
        "declaration, and `_type_width(st) == 64` is false for 1 and 32 alike"),
    Mut(OCM, "outline-fresh-names", '''        while any(p.startswith(base) for p in taken_prefixes):
            base += "x"''', '''        pass''', "fresh register names may collide with the kernel's"),
    Mut(ODL, "outline-readback-offset",
        'off = f"+{addr.offset}" if addr.offset > 0 else (str(addr.offset) if addr.offset else "+0")',
        'off = "+0"', "read-back stores ignore the slot offset"),
    Mut(ODL, "outline-readback-barrier", 'if st.index > last_read and is_block_barrier(st):',
        'if False:', "the call text's barrier after the scratch reads not replicated"),
    Mut(OCS, "outline-passed-special", '''            if isinstance(pv.value, Reg) and not pv.value.special:
                out.setdefault(pv.value.name, pv)''', '''            if isinstance(pv.value, Reg):
                out.setdefault(pv.value.name, pv)''', "a special register passed by value "
        "counted as a passed register",
        equivalent="the passed-register map is looked up only with names from def/use sets "
        "(region live-ins, recompute sources, read-back address inputs) or a `mov`'s "
        "destination, and def_use never lists a special register; the one walk over it (kernel-"
        "parameter reads) asks each passed register's reaching definitions, and nothing "
        "defines %tid.x, so the extra key matches nothing: the body is byte-identical (checked "
        "with a call passing %tid.x by value and a rewritten `ld.param` in the region)"),
]

BD_R, BD_H, BD_P = "rrsplice/body/render.py", "rrsplice/body/header.py", "rrsplice/body/plan.py"
AL, PO, FM, FL = ("rrsplice/workflow/align.py", "rrsplice/workflow/port.py", "rrsplice/fragments/fragmap.py",
                  "rrsplice/fragments/layout.py")
DE, RZ, RR, RO = ("rrsplice/fragments/descriptor.py", "rrsplice/rewrite/rz_round.py",
                  "rrsplice/rewrite/rules.py", "rrsplice/rewrite/operand_facts.py")
CA, FS = "rrsplice/infra/cache.py", "rrsplice/infra/fsutil.py"

# Issue 24: behaviour mutations of body/, align, port, fragmap, fraglayout, descriptor,
# rewrite, cache, fsutil and isa rows, written from the modules alone, without reading their
# tests (blind=True). The first five are the body bugs the issue lists.
BLIND = [
    # ------------------------------------------------------------------ body/
    Mut(BD_R, "body-pitch-m", 'out.append(f"#define {p.callee.upper()}_LDA {p.k}',
        'out.append(f"#define {p.callee.upper()}_LDA {p.m}', "the staged image's row pitch "
        "written as M instead of K", blind=True),
    Mut(BD_R, "body-image-lane-slot", 'rr_shared_ptr({scratch} + (tid & ~31u) * {p.stride}u);',
        'rr_shared_ptr({scratch} + tid * {p.stride}u);', "the image based at the lane's slot "
        "instead of the warp's", blind=True),
    Mut(BD_H, "body-tid-z-stride",
        'return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);',
        'return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.x * threadIdx.z);',
        "the linear thread id (CUDA) uses blockDim.x for the z stride", blind=True),
    Mut(BD_H, "body-mma-b-swapped", '"r"(b0), "r"(b1), "r"(c0), "r"(c1));',
        '"r"(b1), "r"(b0), "r"(c0), "r"(c1));', "the two B registers given to mma.sync "
        "swapped", blind=True),
    Mut(BD_H, "body-bpermute-lane", '__builtin_amdgcn_ds_bpermute(lane << 2, (int)v)',
        '__builtin_amdgcn_ds_bpermute(lane, (int)v)', "the HIP ds_bpermute given a lane "
        "number instead of a byte address", blind=True),
    Mut(BD_H, "body-hip-tid-z-stride", '(__builtin_amdgcn_workitem_id_y() + '
        '__builtin_amdgcn_workgroup_size_y() *', '(__builtin_amdgcn_workitem_id_y() + '
        '__builtin_amdgcn_workgroup_size_x() *', "the linear thread id (HIP) uses the x size "
        "for the z stride", blind=True),
    Mut(BD_H, "body-f16-ties-away", 'if (rem > half || (rem == half && (q & 1)))',
        'if (rem >= half)', "the HIP fallback rounds f16 ties away from zero", blind=True),
    Mut(BD_R, "body-slot-always-lane", 'index = "tid" if p.slots == "thread" else '
        '"(rr_u32)lane"', 'index = "(rr_u32)lane"', "per-thread return slots indexed by the "
        "lane", blind=True),
    Mut(BD_P, "body-ret-offset", 'rets.append(Ret(reg, addr.offset or 0, d_of[reg]))',
        'rets.append(Ret(reg, 0, d_of[reg]))', "every result stored at the slot's first word",
        blind=True),
    Mut(BD_P, "body-c-reversed", 'tuple(src(r, "C") for r in mma.c)',
        'tuple(src(r, "C") for r in reversed(mma.c))', "the two C registers of a step "
        "swapped", blind=True),
    Mut(BD_R, "body-no-block-barrier", '    if p.barrier:\n', '    if False:\n',
        "the recipe's block barrier before the stores dropped", blind=True),
    # ------------------------------------------------------------------ align
    Mut(AL, "align-imm-ignored", '    if isinstance(op, Imm):\n        return op.text',
        '    if isinstance(op, Imm):\n        return "IMM"', "statements differing in an "
        "immediate correspond", blind=True),
    Mut(AL, "align-offset-ignored", 'return f"[{base}+{op.offset}"', 'return f"[{base}+"',
        "statements differing in an address offset correspond", blind=True),
    Mut(AL, "align-not-injective",
        'if rmap.setdefault(x, y) != y or rback.setdefault(y, x) != x:',
        'if rmap.setdefault(x, y) != y:', "two reference registers mapped to one target "
        "register accepted", blind=True),
    Mut(AL, "align-split-accepted", '        if bl - bf != last - first:\n',
        '        if False:\n', "a region with statements inserted in the target accepted",
        blind=True),
    Mut(AL, "align-guard-unnamed", 'if st.guard is not None and not st.guard.reg.special:\n'
        '        regs.append(st.guard.reg.name)',
        'if False:\n        regs.append(st.guard.reg.name)',
        "guard predicates left out of the register map", blind=True),
    Mut(AL, "align-global-ambiguous",
        'rmap = {k: next(iter(v)) for k, v in cand.items() if len(v) == 1}',
        'rmap = {k: min(v) for k, v in cand.items()}', "a name mapping two ways outside the "
        "region mapped anyway", blind=True),
    Mut(AL, "align-modifiers-ignored",
        'return g + st.opcode + " " + " ".join(_shape(o, fn) for o in st.operands)',
        'return g + st.base + " " + " ".join(_shape(o, fn) for o in st.operands)',
        "statements differing in their modifiers correspond", blind=True),
    # ------------------------------------------------------------------ port
    Mut(PO, "port-unmapped-accepted", 'if tok in self.declared and tok not in self.unmapped:',
        'if False:', "a recipe register the alignment does not map kept as is", blind=True),
    Mut(PO, "port-global-wins", 'rmap = {**rmap, **maps[0]}', 'rmap = {**maps[0], **rmap}',
        "outside-region maps override the region's own", blind=True),
    Mut(PO, "port-end-line",
        'new_lines = (first + sb1.line - sa1.line, end + sb2.end_line - sa2.end_line)',
        'new_lines = (first + sb1.line - sa1.line, end + sb2.line - sa2.line)',
        "the ported cut's end shifted by the last statement's first line", blind=True),
    Mut(PO, "port-no-recheck", '    if not rep.ok:\n        raise PortError(f"the recipe ported',
        '    if False:\n        raise PortError(f"the recipe ported',
        "a ported recipe failing its checks written", blind=True),
    Mut(PO, "port-line-shift-start", 'return sb.end_line if at_end else sb.line',
        'return sb.line', "cut_after lines ported to the statement's first line", blind=True),
    # ------------------------------------------------------------------ fragmap
    Mut(FM, "fragmap-weight-elem-size", 'wb = self.source.offset(lane) + e * size',
        'wb = self.source.offset(lane) + e', "weight bytes of f16 elements one apart",
        blind=True),
    Mut(FM, "fragmap-transposed",
        'out.append((lane, e, self.row_base + r, self.col_base + c, wb))',
        'out.append((lane, e, self.row_base + c, self.col_base + r, wb))',
        "fragment elements placed transposed", blind=True),
    Mut(FM, "fragmap-rows-from-cols", 'return min(x[2] for x in el), max(x[2] for x in el)',
        'return min(x[2] for x in el), max(x[3] for x in el)', "a fragment's row span ends "
        "at its last column", blind=True),
    # ------------------------------------------------------------------ fraglayout
    Mut(FL, "fraglayout-k16-a8-perm", '_S16816I, 16, 16, 2, 4, 8, _G, (0,) * 4 + (8,) * 4, '
        '(("t", 4),), _rep((0, 1, 2, 3), 2)))', '_S16816I, 16, 16, 2, 4, 8, _G, (0,) * 4 + '
        '(8,) * 4, (("t", 4),), (0, 1, 2, 3, 1, 0, 3, 2)))', "m16n8k16 8-bit A: the second "
        "register's bytes permuted (still every element once)", blind=True),
    Mut(FL, "fraglayout-k8-a16-perm",
        '_S1688, 16, 8, 2, 2, 16, _G, (0, 0, 8, 8), (("t", 2),), (0, 1, 0, 1)))',
        '_S1688, 16, 8, 2, 2, 16, _G, (0, 0, 8, 8), (("t", 2),), (1, 0, 1, 0)))',
        "m16n8k8 f16 A: the halves of each register swapped", blind=True),
    Mut(FL, "fraglayout-m8n8k16-b-rev",
        '_S8816, 16, 8, 1, 4, 8, (("t", 4),), (0, 1, 2, 3), _G, (0,) * 4))',
        '_S8816, 16, 8, 1, 4, 8, (("t", 4),), (3, 2, 1, 0), _G, (0,) * 4))',
        "m8n8k16 B: bytes in reverse order", blind=True),
    Mut(FL, "fraglayout-k16-bhalf-swap",
        '_S16816F, 16, 8, 2, 2, 16, (("t", 2),), (0, 1, 8, 9), _G, (0,) * 4))',
        '_S16816F, 16, 8, 2, 2, 16, (("t", 2),), (8, 9, 0, 1), _G, (0,) * 4))',
        "m16n8k16 f16 B: the two registers' k halves swapped", blind=True),
    Mut(FL, "fraglayout-coord-range", 'and 0 <= elem < r.per_reg):',
        'and 0 <= elem <= r.per_reg):', "an element index one past the register accepted",
        blind=True),
    Mut(FL, "fraglayout-owner-instance", 'got = _owners(self).get((instance, row, col))',
        'got = _owners(self).get((0, row, col))', "the owner of an m8n8k4 element ignores "
        "its product", blind=True),
    Mut(FL, "fraglayout-b-order-of-a", '"B": layout(mma.shape, "B", mma.b_type, b_order)',
        '"B": layout(mma.shape, "B", mma.b_type, a_order)', "B's layout order taken from A's",
        blind=True),
    Mut(FL, "fraglayout-c-family-half", '"8bit" if dtype == "s32" else "half")', '"half")',
        "an s32 accumulator without its operand type taken as the f16 family", blind=True),
    # ------------------------------------------------------------------ descriptor
    Mut(DE, "descriptor-signatures-reversed", 'for k, need in EPILOGUE_SIGNATURES:',
        'for k, need in reversed(EPILOGUE_SIGNATURES):', "gap signatures tried in reverse "
        "order", blind=True),
    Mut(DE, "descriptor-prologue-any", 'if all(d < first_mma for d in defs):',
        'if any(d < first_mma for d in defs):', "A fragments partly defined after the first "
        "mma called a prologue", blind=True),
    Mut(DE, "descriptor-verified-always", 'verified=bool(ev)),', 'verified=True),',
        "an unrecognised gap reported as verified", blind=True),
    # ------------------------------------------------------------------ rewrite
    Mut(RZ, "rewrite-rz-ties-toward-zero", 'setp.ge.f32 %rzr_p, %rzr_u, 0f3F000000;',
        'setp.gt.f32 %rzr_p, %rzr_u, 0f3F000000;', "rz_round rounds ties toward zero "
        "(roundf(2.5) = 2)", blind=True),
    Mut(RZ, "rewrite-rz-redefined", 'if x in du.defs or s in du.defs or d in du.defs:',
        'if d in du.defs:', "X or S redefined between the add and the cvt accepted",
        blind=True),
    Mut(RZ, "rewrite-rz-any-constant", '            if float_bits(k) == HALF:\n',
        '            if float_bits(k) is not None:\n', "copysign of any constant taken as "
        "the round idiom", blind=True),
    Mut(RZ, "rewrite-rz-sum-shared", '        if others:\n            return bad(f"the sum',
        '        if False:\n            return bad(f"the sum', "an add whose sum has other "
        "readers removed", blind=True),
    Mut(RO, "rewrite-fits-any-reg", '        return reg_size(fn, op) == size\n',
        '        return reg_size(fn, op) is not None\n', "a register of another width fits",
        blind=True),
    Mut(RO, "rewrite-float-bits-double",
        'if op.kind_name == "hexfloat" and op.text[:2].lower() == "0f":',
        'if op.kind_name == "hexfloat":', "a 0d (f64) immediate read as f32 bits", blind=True),
    # ------------------------------------------------------------------ cache
    Mut(CA, "cache-group-writable", 'if st.st_mode & 0o022:', 'if st.st_mode & 0o002:',
        "a group-writable cache directory or entry trusted", blind=True),
    Mut(CA, "cache-other-owner", 'if hasattr(os, "geteuid") and st.st_uid != os.geteuid():',
        'if False:', "a cache owned by another user trusted", blind=True),
    Mut(CA, "cache-analysis-key-no-function",
        'akey = hashlib.sha256(f"{key}|{index}|{fn.name}|{len(fn.statements)}".encode())',
        'akey = hashlib.sha256(f"{key}".encode())', "an analysis cache key without the "
        "function", blind=True),
    Mut(CA, "cache-key-no-version",
        'd.update(f"|{__version__}|{_FORMAT}|{sys.version_info[:2]}|".encode())',
        'd.update(b"|")', "a module key without the format and Python version", blind=True),
    # ------------------------------------------------------------------ fsutil
    Mut(FS, "fsutil-string-compare", '        if Path(a).resolve() == Path(b).resolve():\n'
        '            return True\n        return os.path.samefile(a, b)',
        '        return os.fspath(a) == os.fspath(b)',
        "input protection compares path strings (a symlink reaches the input)", blind=True),
    Mut(FS, "fsutil-no-hardlink", '        return os.path.samefile(a, b)\n',
        '        return False\n', "a hard link to the input written over", blind=True),
    Mut(FS, "fsutil-fifo-opened",
        '    if not stat.S_ISREG(st.st_mode):\n        raise InputError(p, f"not a regular',
        '    if stat.S_ISSOCK(st.st_mode):\n        raise InputError(p, f"not a regular',
        "a FIFO or device opened as an input", blind=True),
    Mut(FS, "fsutil-mode-lost",
        '_replace(target, data, fsync, None if st is None else stat.S_IMODE(st.st_mode))',
        '_replace(target, data, fsync, None)', "an overwritten file loses its mode",
        blind=True),
    Mut(FS, "fsutil-symlink-replaced",
        'target = Path(os.path.realpath(shown)) if os.path.islink(shown) else Path(shown)',
        'target = Path(shown)', "writing through a symlink replaces the link", blind=True),
    # ------------------------------------------------------------------ isa rows
    Mut(I, "isa-tld4-dest-use", 'tld4         texture           D U*     read',
        'tld4         texture           U*       read', "tld4 destinations read as uses",
        blind=True),
    Mut(I, "isa-red-write", 'red          sync              U*       atomic',
        'red          sync              U*       write', "red's memory effect a plain write",
        blind=True),
    Mut(I, "isa-cp-async-read", 'cp.async     data              U*       copy async',
        'cp.async     data              U*       read async', "cp.async's memory effect a "
        "read", blind=True),
    Mut(I, "isa-bar-cta-not-block",
        'BLOCK_BARRIERS = ("bar.sync", "barrier.sync", "bar.cta.sync", "barrier.cta.sync")',
        'BLOCK_BARRIERS = ("bar.sync", "barrier.sync", "barrier.cta.sync")',
        "bar.cta.sync not treated as a block barrier", blind=True),
    Mut(I, "isa-bar-warp-block", 'bar.warp     sync              U*       barrier=warp',
        'bar.warp     sync              U*       barrier=block', "bar.warp.sync taken as a "
        "block barrier", blind=True),
    Mut(I, "isa-atom-read", 'atom         sync              D U*     atomic',
        'atom         sync              D U*     read', "atom's memory effect a read",
        blind=True),
]
# ------------------------------------------------------------------ gfx12 data paths
LN, LH, BW = "rrsplice/lift/lanes.py", "rrsplice/lift/header.py", "rrsplice/body/wmma.py"
WMMA_TESTS = (T + "test_body_wmma.py", T + "test_lift_wmma.py",
              "-kevery_phase and swin_tiny_sm89 or tiny_wmma_body_matches or slots")
MUTATIONS += [
    Mut(LN, "lanes-segment-mask-ignored", "c_bits & 0x1F1F != FULL_WARP_C",
        "c_bits & 0x1F != FULL_WARP_C", "a shuffle with a segment mask taken as a butterfly"),
    Mut(LN, "lanes-clamp-ignored", "c_bits & 0x1F1F != FULL_WARP_C",
        "c_bits & 0x1F00 != 0", "a shuffle with a clamp below 31 taken as a butterfly"),
    Mut(LN, "lanes-mixed-writes", "k = ks.pop() if len(ks) == 1 else None",
        "k = max((x for x in ks if x is not None), default=None)",
        "a register with another write besides the xor taken as laneid ^ K"),
    Mut(LN, "lanes-guarded-xor", 'if st.guard is not None or st.view.base != "xor"',
        'if st.view.base != "xor"', "a guarded xor taken as every lane's laneid ^ K"),
    Mut(LH, "lanexor-permlanex16-identity", "fields = [p ^ (k & 15) for p in range(16)]",
        "fields = list(range(16))", "v_permlanex16 selectors without the low bits of K"),
    Mut(LH, "lanexor-row-xmask-leaves-row",
        "return rr_lift_lane(v, (l & ~15) | ((l & 15) ^ k));",
        "return rr_lift_lane(v, (l & 15) ^ k);", "row_xmask emulated across rows"),
    Mut(LH, "pack-b16-halves-swapped", "const rr_u16x2 v = {lo, hi};",
        "const rr_u16x2 v = {hi, lo};", "mov.b32 {lo, hi} packed high half first"),
    Mut(BW, "wmma-slot-halves-swapped",
        "(rr_u32)rr_acc_to_f16(d[2 * t])\n                         | (rr_u32)rr_acc_to_f16(d[2 * t + 1]) << 16",
        "(rr_u32)rr_acc_to_f16(d[2 * t + 1])\n                         | (rr_u32)rr_acc_to_f16(d[2 * t]) << 16",
        "D pairs stored into the return slots with their halves swapped", tests=WMMA_TESTS),
    Mut(BW, "wmma-operands-untransposed", "acc = rr_wmma_fp8(b0, a0, acc, lane);",
        "acc = rr_wmma_fp8(a0, b0, acc, lane);",
        "the first k16 WMMA of a step not transposed", tests=WMMA_TESTS),
    Mut(BW, "wmma-seed-row-unmasked", "return rr_wmma_widen_c16(cs + ((@C_COL@) & 7) * 16 + @C_ROW@);",
        "return rr_wmma_widen_c16(cs + (@C_COL@) * 16 + @C_ROW@);",
        "an eight-row f16 seed image read past its eighth row", tests=WMMA_TESTS),
]
MUTATIONS += BLIND
