"""The function's dataflow analysis and memoised facts, shared by the checks that need
them (through the model cache)."""

from __future__ import annotations

from ..analysis.dataflow import analyze
from ..infra.cache import load_analysis, remember_module_fact
from ..ptx.model import Function, Module
from .report import Report


def _analyze(rep: Report, fn: Function):
    if rep.analysis is None:
        if rep.target is not None:
            rep.analysis = load_analysis(rep.target.module, fn)
        else:
            rep.analysis = analyze(fn)
    return rep.analysis


def _memo(module: Module, fn: Function, what: str, compute):
    """`compute()` (JSON data), remembered in the model cache next to the module's entry
    so that the daily re-apply of one recipe skips it; computed when the cache is off. (A
    change to any of rrsplice's code invalidates it.)"""
    return remember_module_fact(module, f"{fn.name}|{what}", compute)
