"""Shared builder for the cfg_loops.ptx test recipes (not a recipe: no recipe())."""

MODULE = "small/cfg_loops.ptx"


def call_text(passed, returned, pred=None):
    lines = ["{", "\t.reg .b32 %rt<2>;"]
    names = []
    for i, r in enumerate(passed):
        lines += ["\t.param .b32 a%d;" % i, "\tst.param.b32 [a%d+0], %s;" % (i, r)]
        names.append("a%d" % i)
    if pred:
        i = len(names)
        lines += ["\t.param .b32 a%d;" % i, "\tselp.u32 %%rt0, 1, 0, %s;" % pred,
                  "\tst.param.b32 [a%d+0], %%rt0;" % i]
        names.append("a%d" % i)
    lines.append("\t.param .align 8 .b8 rv[%d];" % (4 * len(returned)))
    lines.append("\tcall.uni (rv), cfg_body, (%s);" % ", ".join(names))
    lines += ["\tld.param.b32 %s, [rv+%d];" % (r, 4 * i) for i, r in enumerate(returned)]
    lines.append("}")
    return "\n".join(lines)


def extern_text(n_args, n_ret):
    params = ",\n\t".join(".param .b32 cfg_body_a%d" % i for i in range(n_args))
    return (".extern .func (.param .align 8 .b8 cfg_body_ret[%d]) cfg_body\n(\n\t%s\n)\n;\n"
            % (4 * n_ret, params))


def make(cut, passed, returned, pred=None):
    n = len(passed) + (1 if pred else 0)
    return dict(file=MODULE, cut_call=cut, call=call_text(passed, returned, pred),
                extern=extern_text(n, len(returned)))
