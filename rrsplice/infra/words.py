"""Counted nouns in messages: `1 phase`, `2 phases` (never `1 phases` or `phase(s)`)."""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n noun` with the noun in the plural unless n is 1 (`plural` for irregular ones)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
