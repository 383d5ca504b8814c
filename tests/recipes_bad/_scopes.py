"""Shared builder for the scopes.ptx test recipes (not a recipe: no recipe())."""

MODULE = "small/scopes.ptx"


def make(cut, passed, returned):
    lines = ["{"]
    names = []
    for i, r in enumerate(passed):
        lines += ["\t.param .b32 a%d;" % i, "\tst.param.b32 [a%d+0], %s;" % (i, r)]
        names.append("a%d" % i)
    lines.append("\t.param .align 4 .b8 rv[%d];" % (4 * max(1, len(returned))))
    lines.append("\tcall.uni (rv), scoped_body, (%s);" % ", ".join(names))
    lines += ["\tld.param.b32 %s, [rv+%d];" % (r, 4 * i) for i, r in enumerate(returned)]
    lines.append("}")
    params = ",\n\t".join(".param .b32 scoped_body_a%d" % i for i in range(len(passed)))
    extern = (".extern .func (.param .align 4 .b8 scoped_body_ret[%d]) scoped_body\n(\n\t%s\n)\n;\n"
              % (4 * max(1, len(returned)), params))
    return dict(file=MODULE, cut_call=cut, call="\n".join(lines), extern=extern)
