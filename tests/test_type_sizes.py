"""Every reader of a PTX type's size agrees with the one type table (rrsplice.ptx.isa.TYPES),
for every type in it: the readers that derive from it, on real declarations and statements,
and the tables that keep a copy of their own (the scaffold's slot sizes, which every
generated recipe carries, and the launch files' scalar formats), row by row."""

from __future__ import annotations

import ast
import struct
from pathlib import Path

import pytest

from rrsplice import parse
from rrsplice.ptx.isa import TYPES, element_bytes, type_bytes
from rrsplice.ptx.model import Reg
from rrsplice.ptx.scopes import register_decl
from rrsplice.rewrite.operand_facts import reg_size
from rrsplice.workflow.launch import SCALARS
from rrsplice.workflow.recipe import SUST_KINDS
from rrsplice.workflow.scaffold import TYPE_SIZE, reg_ptx_type

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(TYPES)
SIZED = [n for n in NAMES if TYPES[n].kind != "pred"]


def _function(name: str):
    """A kernel declaring `%v<3>` of type `name` and loading one from global memory."""
    text = (".version 8.7\n.target sm_90\n.address_size 64\n"
            ".visible .entry k(.param .u64 p)\n{\n"
            f"    .reg .{name} %v<3>;\n    .reg .b64 %rd<2>;\n"
            f"    ld.global.{name} %v1, [%rd1];\n"
            f"    ld.global.v2.{name} {{%v1, %v2}}, [%rd1];\n"
            "    ret;\n}\n")
    return parse(text).functions[-1]


@pytest.mark.parametrize("name", NAMES)
def test_a_declared_register_has_its_types_size(name):
    fn = _function(name)
    t = TYPES[name]
    d = register_decl(fn, "%v1")
    assert d is not None and d.type == "." + name
    assert type_bytes(d.type) == type_bytes(name) == t.bits // 8 * (t.kind != "pred")
    assert reg_size(fn, Reg("%v1")) == type_bytes(name)
    # how the register crosses a generated call: .pred, else the .bN of its size
    # (.b32 for the sizes no .bN register class has: 1 and 16 bytes)
    want = ".pred" if t.kind == "pred" else f".b{t.bits}" if t.bits in (16, 32, 64) else ".b32"
    assert reg_ptx_type(fn, "%v1") == want


@pytest.mark.parametrize("name", SIZED)
def test_a_load_moves_its_types_bytes_per_element(name):
    scalar, vector = (st for st in _function(name).statements if st.base == "ld")
    assert element_bytes(scalar.modifiers) == element_bytes(vector.modifiers) \
        == TYPES[name].bits // 8
    assert vector.view.vector == 2 and vector.view.type is TYPES[name]


def test_what_is_not_a_sized_type_takes_the_default():
    assert type_bytes("v4") is None and type_bytes(".rn", 4) == 4 and type_bytes(None) is None
    assert type_bytes(".pred", 4) == 0
    assert element_bytes(["global", "v2"]) == 4 and element_bytes(["pred"], 8) == 8


def _slot_size_errors(table: dict) -> list:
    """Slots whose size is not the table's: `.bN` and `.vK.bN` hold the type's bytes (K of
    them); a predicate crosses the call as a 32-bit value."""
    bad = []
    for key, size in table.items():
        *vec, ty = key.lstrip(".").split(".")
        lanes = int(vec[0][1:]) if vec else 1
        if size != (4 if ty == "pred" else lanes * TYPES[ty].bits // 8):
            bad.append(key)
    return bad


def test_the_scaffolds_slot_sizes_are_the_tables():
    assert _slot_size_errors(TYPE_SIZE) == []
    assert _slot_size_errors({".v2.b16": 2, ".b64": 4, ".pred": 0}) == [".v2.b16", ".b64",
                                                                        ".pred"]


def test_every_generated_recipe_carries_the_tables_slot_sizes():
    """The recipes `rrsplice recipe new` wrote (self-contained, so they keep a copy; older
    ones list fewer slot types)."""
    seen = 0
    for path in sorted((ROOT / "recipes").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None)
                                                 for t in node.targets] == ["_SIZE"]:
                table = ast.literal_eval(node.value)
                assert _slot_size_errors(table) == [] and ".b32" in table, path.name
                seen += 1
    assert seen >= 5


def test_launch_scalars_pack_to_the_types_bytes():
    """A launch file's scalar kinds (`i8` is PTX's `s8`) against Python's struct sizes."""
    for kind, fmt in SCALARS.items():
        ptx = "s" + kind[1:] if kind.startswith("i") else kind
        assert struct.calcsize(fmt) == TYPES[ptx].bits // 8, kind


def test_surface_store_values_are_register_types():
    for kind in SUST_KINDS.values():
        assert TYPES[kind.value_type.lstrip(".")].kind == "bits"
