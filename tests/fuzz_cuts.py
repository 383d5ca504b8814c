"""Generators for the cut fuzz suite (tests/test_fuzz_cuts.py): kernels whose values cross
a cut in the shapes the first campaign never made, each with its ground truth.

* `scoped_program`: nested `{ }` blocks that use a name before, and after, their own
  `.reg` of it, and `.reg`s with special registers' names (`%smid`, `%envreg3`, ...),
  each operand recorded with the declaration it binds to (ptxas: a declaration scopes
  from its point on; a declared special name is a variable);
* `cut_program`: straight-line kernels with predicates (guards, `selp`), a `.v2` vector
  register (whole loads and stores, element reads and writes) and declared special names,
  plus a random cut of them; the reference interpreter is the ground truth for values.
"""

from __future__ import annotations

SPECIAL_NAMES = ["%smid", "%warpid", "%nsmid", "%envreg3", "%lanemask_eq", "%clock_hi",
                 "%pm7_64", "%reserved_smem_offset_9", "%laneid", "%gridid"]

HEAD = """.version 8.7
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
"""


def scoped_program(rnd) -> tuple[str, list]:
    """(PTX text, truth): truth[i] is, for statement s(i+1), the list of (name, binding)
    of its register operands in order, binding "outer" (the body's declaration, or the
    name undeclared), "special" (machine state) or ("block", k) (the k-th block, counted
    in source order among blocks that declare registers)."""
    names = ["%r1", "%r2", "%r3"] + rnd.sample(SPECIAL_NAMES, 2)
    body_decls = ["\t.reg .b32 %r<8>;", "\t.reg .b64 %rd<3>;"]
    lines: list = []
    truth: list = []
    declared_top = set()
    # body-level: a special name is read as machine state before its declaration
    spec = names[3]
    lines.append(f"\tmov.u32 %r4, {spec};")
    truth.append([("%r4", "outer"), (spec, "special")])
    block_no = 0
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.5:
            n = rnd.choice(names[3:])
            if n not in declared_top:
                lines.append(f"\t.reg .b32 {n};")
                declared_top.add(n)
        # one block: uses before its declaration, the declaration, uses after
        name = rnd.choice(names)
        block_no += 1
        lines.append("\t{")
        pre = rnd.randint(0, 2)
        post = rnd.randint(1, 2)
        outer = "outer" if name in names[:3] or name in declared_top else "special"
        for _ in range(pre):
            if outer == "special":
                lines.append(f"\tmov.u32 %r5, {name};")
                truth.append([("%r5", "outer"), (name, "special")])
            else:
                lines.append(f"\tadd.u32 {name}, {name}, 1;")
                truth.append([(name, "outer"), (name, "outer")])
        lines.append(f"\t.reg .b32 {name};")
        for _ in range(post):
            lines.append(f"\tmov.u32 {name}, 7;")
            truth.append([(name, ("block", block_no))])
            lines.append(f"\tadd.u32 %r6, %r6, {name};")
            truth.append([("%r6", "outer"), ("%r6", "outer"), (name, ("block", block_no))])
        lines.append("\t}")
        # after the block, the name is the outer one again
        if outer == "special":
            lines.append(f"\tmov.u32 %r5, {name};")
            truth.append([("%r5", "outer"), (name, "special")])
        else:
            lines.append(f"\tadd.u32 %r7, {name}, 2;")
            truth.append([("%r7", "outer"), (name, "outer")])
    lines.append("\tret;")
    truth.append([])
    text = HEAD + "\n".join(body_decls) + "\n" + "\n".join(lines) + "\n}\n"
    return text, truth


def cut_program(rnd) -> tuple[str, str, list]:
    """(PTX text, statement range "sA-sB", the global byte offsets the kernel stores to)."""
    specials = rnd.sample(SPECIAL_NAMES, 2)
    scalars = ["%r1", "%r2", "%r3", "%r4"] + specials
    preds = ["%p1", "%p2"]
    decls = ["\t.reg .pred %p<3>;", "\t.reg .b32 %r<8>;", "\t.reg .b64 %rd<3>;",
             "\t.reg .v2 .b32 %v1;"] + [f"\t.reg .b32 {s};" for s in specials]
    head = ["\tld.param.u64 %rd1, [k_param_0];", "\tcvta.to.global.u64 %rd2, %rd1;"]
    for i, r in enumerate(scalars):
        head.append(f"\tld.global.u32 {r}, [%rd2+{4 * i}];")
    head.append("\tld.global.v2.u32 %v1, [%rd2+32];")
    for i, p in enumerate(preds):
        head.append(f"\tsetp.gt.u32 {p}, {scalars[i]}, {rnd.choice([3, 10, 50])};")
    body = []
    for _ in range(rnd.randint(6, 14)):
        d, a, b = rnd.choice(scalars), rnd.choice(scalars), rnd.choice(scalars)
        p = rnd.choice(preds)
        e = rnd.choice("xy")
        body.append(rnd.choice([
            f"\tadd.u32 {d}, {a}, {b};",
            f"\txor.b32 {d}, {a}, {b};",
            f"\tsetp.{rnd.choice(['gt', 'lt', 'ne'])}.u32 {p}, {a}, {rnd.choice([3, 10, 50])};",
            f"\t@{p} add.u32 {d}, {a}, 1;",
            f"\t@!{p} sub.u32 {d}, {a}, {b};",
            f"\tselp.b32 {d}, {a}, {b}, {p};",
            f"\tmov.b32 {d}, %v1.{e};",
            f"\tmov.b32 %v1.{e}, {a};",
            "\tld.global.v2.u32 %v1, [%rd2+40];",
        ]))
    tail = []
    stores = []
    for i, r in enumerate(scalars):
        tail.append(f"\tst.global.u32 [%rd2+{64 + 4 * i}], {r};")
        stores.append(64 + 4 * i)
    tail.append("\tst.global.v2.u32 [%rd2+96], %v1;")
    stores += [96, 100]
    for i, p in enumerate(preds):
        tail.append(f"\t@{p} st.global.u32 [%rd2+{112 + 4 * i}], 1;")
    tail.append("\tret;")
    first = len(head) + 1
    a = rnd.randint(first, first + len(body) - 1)
    b = rnd.randint(a, first + len(body) - 1)
    text = HEAD + "\n".join(decls) + "\n\n" + "\n".join(head + body + tail) + "\n}\n"
    return text, f"s{a}-s{b}", stores
