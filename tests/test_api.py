"""The package's public names stay what the README documents, whatever was imported
before (a submodule named like a public function must never shadow it)."""

import importlib
import pkgutil

import rrsplice


def test_public_names_survive_importing_every_submodule():
    for info in pkgutil.walk_packages(rrsplice.__path__, "rrsplice."):
        importlib.import_module(info.name)
    assert callable(rrsplice.parse) and rrsplice.parse.__module__ == "rrsplice.ptx.parser"
    assert callable(rrsplice.emit) and rrsplice.emit.__module__ == "rrsplice.ptx.emit"
    from rrsplice import emit, parse
    m = parse(".version 8.7\n.target sm_89\n.address_size 64\n"
              ".visible .entry k()\n{\n\tret;\n}\n")
    assert emit(m) == m.data
    for name in rrsplice.__all__:
        assert getattr(rrsplice, name) is not None, name
