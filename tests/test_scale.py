"""Scale behaviour that does not need the big modules: the parse shares the result of an
instruction text that recurs across kernels, and a module too large to be worth pickling
on its first parse is stored only when it is parsed a second time."""

from __future__ import annotations

from conftest import FIXTURES

import rrsplice

SMALL = FIXTURES / "small" / "cfg_loops.ptx"


def _two_kernels() -> str:
    body = ("\t.reg .b32 %r<4>;\n\tmov.u32 %r1, %tid.x;\n\tadd.u32 %r2, %r1, 1;\n"
            "\t{ .reg .b32 t; add.u32 t, %r2, 1; mov.u32 %r3, t; }\n"
            "\tmov.u32 %r3, t;\n\tret;\n")
    return (".version 9.0\n.target sm_80\n.address_size 64\n.global .u32 t;\n"
            + "".join(f".visible .entry k{i}()\n{{\n{body}}}\n" for i in range(2)))


def test_recurring_instruction_text_shares_its_parse():
    m = rrsplice.parse(_two_kernels())
    a, b = (fn.statements for fn in m.functions)
    assert [s.text for s in a] == [s.text for s in b]
    assert all(x.operands is y.operands for x, y in zip(a, b, strict=False) if x.depth == 0)
    # the same text inside the scope that declares `t` and outside it (where `t` is the
    # global variable) is parsed apart: the shared parse is keyed by the names in scope
    inner = [s for s in a if s.depth == 1 and s.opcode == "mov.u32"][0]
    outer = [s for s in a if s.depth == 0 and s.text == inner.text][0]
    assert isinstance(inner.operands[1], rrsplice.Reg) and inner.operands[1].key != "t"
    assert outer.operands[1] == rrsplice.Symbol("t")
    assert inner.function is m.functions[0] and b[3].function is m.functions[1]


def test_big_module_is_stored_on_its_second_parse(tmp_path, monkeypatch):
    from rrsplice.infra import cache
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    monkeypatch.setattr(cache, "STORE_AT_ONCE_LINES", 10)
    src = tmp_path / "m.ptx"
    src.write_bytes(SMALL.read_bytes())
    entry = cache.entry_path(src)
    seen = entry.with_suffix(".seen")

    cache.load_module(src)
    assert not entry.exists() and seen.is_file()      # first parse: only remembered
    cache.forget_loaded()                             # (as a second run would)
    cache.load_module(src)
    assert entry.is_file() and not seen.exists()      # second parse: stored
    cache.forget_loaded()
    monkeypatch.setattr("rrsplice.ptx.parser.parse_bytes",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("parsed again")))
    assert cache.load_module(src).functions[0].name == "cfg_loops"   # third: from the cache
    assert cache.clear() == 1 and not entry.exists()


def test_small_module_is_stored_at_once(tmp_path, monkeypatch):
    from rrsplice.infra import cache
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    src = tmp_path / "m.ptx"
    src.write_bytes(SMALL.read_bytes())
    cache.load_module(src)
    assert cache.entry_path(src).is_file()
    assert not cache.entry_path(src).with_suffix(".seen").exists()
