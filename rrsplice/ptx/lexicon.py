"""Regular expressions shared by the Lark grammar and the statement splitter.

The grammar file refers to these as `@NAME@` placeholders, so the run of statements Lark
sees as one token is split afterwards with exactly the same item patterns. Possessive
quantifiers (Python 3.11+) keep failing matches linear.
"""

import re

# whitespace and comments, any mix
TRIVIA = r"(?:\s|//[^\n]*+|/\*[^*]*+\*++(?:[^/*][^*]*+\*++)*+/)"

# `NAME:` but not `::` (which appears inside opcodes such as `shared::cta`)
LABEL = r"[A-Za-z_$%][\w$]*+[ \t]*+:(?!:)"

# guard, opcode, operand text up to ';'; operand text may hold `{...}` lists (no ';'
# inside), comments and line breaks
INSTRUCTION = (r"(?:@[ \t]*+(?:![ \t]*+)?[%A-Za-z_$][\w$]*+[ \t]++)?[a-z][\w$]*+(?:(?:\.|::)[\w$]++)*+"
               r"[^;{}\"/]*+(?:(?:\{[^;{}]*+\}|//[^\n]*+|/\*[^*]*+\*++(?:[^/*][^*]*+\*++)*+/)"
               r"[^;{}\"/]*+)*+;")

# a label that names a directive rather than code: `$L__BRX_0: .branchtargets $L1, $L2;`,
# `prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);`, `.calltargets`
LABELLED_DIRECTIVE = r"\s*+\.(?:branchtargets|calltargets|callprototype)\b[^;{}]*+;"

ITEM = f"(?:{LABEL}(?:{LABELLED_DIRECTIVE})?|{INSTRUCTION})"

# a block-scoped declaration simple enough to take inside a SCOPE token
SIMPLE_DECL = r"\.(?:reg|param|local|shared)\b[^;{}=]*+;"

# a nested `{ ... }` block holding only simple declarations, statements, trivia and (up to
# two levels of) such blocks: NVIDIA's `{ cvt.f32.f16 %f1, %rs1;}` and
# `{.reg .f16 low, high; mov.b32 {low, high}, %r9; ...}` scopes, and call blocks.
_SCOPE1 = f"\\{{(?:{TRIVIA}|{SIMPLE_DECL}|{ITEM})*+\\}}"
_SCOPE2 = f"\\{{(?:{TRIVIA}|{SIMPLE_DECL}|{ITEM}|{_SCOPE1})*+\\}}"
SCOPE = f"\\{{(?:{TRIVIA}|{SIMPLE_DECL}|{ITEM}|{_SCOPE2})*+\\}}"

# A run of statements and simple scopes (with the trivia between them) is ONE token: a
# 40k-line body of instructions and `{ cvt ...; }` blocks reaches the LALR parser as a few
# tokens, and rrsplice.ptx.parser splits it with SPLIT.
STATEMENTS = f"(?:{ITEM}|{SCOPE})(?:{TRIVIA}*+(?:{ITEM}|{SCOPE}))*+"

# An instruction whose operands cannot fail to parse: a guard, an opcode and a list of
# only registers (`%r1`, `%tid.x`), register pairs (`%r1|%p1`), brace lists of registers
# and bare names, `[base]`/`[base+N]` addresses, integers of at most 18 decimal or 16 hex
# digits, hex floats and bare names (a label, a symbol, a scoped register: the operand
# parser takes each as one operand). No comment, no `;` before its end and the same guard
# and opcode as INSTRUCTION: every text it matches is a match of INSTRUCTION of the same
# extent, so putting it first in SPLIT changes no item boundary. The parser may decode
# such an instruction later (its parse can report no error).
_SAFE_REG = r"%[A-Za-z_$][\w$]*+(?:\.[xyzwrgba](?![\w$]))?+"
_SAFE_ITEM = rf"(?:{_SAFE_REG}|[A-Za-z_$][\w$]*+)"
_SAFE_OPERAND = (rf"(?:{_SAFE_REG}(?:\|{_SAFE_REG})?+"
                 rf"|\{{\s*+{_SAFE_ITEM}\s*+(?:,\s*+{_SAFE_ITEM}\s*+)*+\}}"
                 r"|\[\s*+%?+[A-Za-z_$][\w$]*+\s*+(?:\+\s*+-?+[0-9]{1,18}+\s*+)?+\]"
                 r"|0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])"
                 r"|0[xX][0-9a-fA-F]{1,16}+U?+(?![\w$])"
                 r"|-?+(?:0|[1-9][0-9]{0,17}+)U?+(?![\w$])|[A-Za-z_$][\w$]*+)")
SAFE_INSTRUCTION = (r"(?:@[ \t]*+(?:![ \t]*+)?[%A-Za-z_$][\w$]*+[ \t]++)?[a-z][\w$]*+(?:(?:\.|::)[\w$]++)*+"
                    rf"(?:\s++{_SAFE_OPERAND}\s*+(?:,\s*+{_SAFE_OPERAND}\s*+)*+)?\s*+;")

# a run of trivia as whitespace runs between comments: the language of TRIVIA*+, with one
# repetition per comment instead of one per blank character (the splitter's regex time)
TRIVIA_RUN = r"\s*+(?:(?://[^\n]*+|/\*[^*]*+\*++(?:[^/*][^*]*+\*++)*+/)\s*+)*+"

# the splitter: one match per label (`ldir` when it labels a directive), instruction
# (`lazy` when SAFE_INSTRUCTION matches it), simple declaration, and `{` and `}` of a
# simple scope (the splitter keeps the nesting, so a scope's text is scanned once), each
# with the trivia before it
SPLIT = re.compile(f"{TRIVIA_RUN}(?:(?P<label>{LABEL})(?P<ldir>{LABELLED_DIRECTIVE})?"
                   f"|(?P<lazy>{SAFE_INSTRUCTION})|(?P<instr>{INSTRUCTION})"
                   f"|(?P<decl>{SIMPLE_DECL})|(?P<open>\\{{)|(?P<close>\\}}))")

# pieces of a simple declaration: its attributes, then its names
DECL_ATTR = re.compile(r"\s*(\.[A-Za-z_][\w$]*)(?:[ \t]+(\d+))?")
DECL_NAME = re.compile(r"\s*([A-Za-z_$%][\w$]*)\s*(?:<\s*(\d+)\s*>)?((?:\s*\[\s*\d*\s*\])*)\s*([,;])")

# TRIVIA's run is possessive: a greedy `(?:...)+` makes Python's matcher keep one
# backtracking frame per repetition, about 150 bytes of memory per character of a long
# run of top-level whitespace (1 MB of blanks cost ~450 MB in the whole parse)
PLACEHOLDERS = {"@STATEMENTS@": STATEMENTS, "@TRIVIA@": TRIVIA + "++", "@SCOPE@": SCOPE}


def grammar_text(raw: str) -> str:
    """Substitute the shared patterns into the grammar (slashes escaped for Lark)."""
    for key, pattern in PLACEHOLDERS.items():
        raw = raw.replace(key, pattern.replace("/", "\\/"))
    return raw
