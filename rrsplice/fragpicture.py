"""A picture of one phase's fragments: its A, B, C and D tiles with the lane and register of
every element, the way the PTX ISA draws fragment layouts (one cell per matrix element,
`T<lane>` over `<register>.<element>`; cell colour = the register's index in its fragment).

SVG is text; PNG is written without an imaging library (zlib + a 3x5 pixel font), so the
picture needs nothing beyond the standard library. Both are written atomically.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from .fsutil import write_atomic

_COLOURS = [(0xDD, 0xEE, 0xFF), (0xFF, 0xE8, 0xCC), (0xDD, 0xF5, 0xDD), (0xF5, 0xDD, 0xF0),
            (0xEE, 0xEE, 0xCC), (0xCC, 0xEE, 0xEE), (0xE8, 0xE0, 0xFF), (0xFF, 0xDD, 0xDD)]


def _grids(pm) -> list:
    """[(title, rows, cols, {(row, col): (lane, reg, elem, index)})] for A, B, C, D."""
    p = pm.phase
    dims = {"A": (p.m, p.k), "B": (p.k, p.n), "C": (p.m, p.n), "D": (p.m, p.n)}
    names = {"A": "A[row][k]", "B": "B[k][n]", "C": "C[row][n] (bias seeds)",
             "D": "D[row][n]"}
    out = []
    for key, frags in (("A", pm.a), ("B", pm.b), ("C", pm.c), ("D", pm.d)):
        cells = {}
        for f in frags:
            for lane, e, r, c, _w in f.elements():
                cells[(r, c)] = (lane, f.reg, e, f.index)
        rows, cols = dims[key]
        out.append((f"phase {p.index} {names[key]} {rows}x{cols}", rows, cols, cells))
    return out


CELL_W, CELL_H, PAD, TITLE = 46, 24, 10, 18


def svg_text(pm) -> str:
    grids = _grids(pm)
    width = max(cols for _t, _r, cols, _c in grids) * CELL_W + 2 * PAD
    height = sum(TITLE + rows * CELL_H + PAD for _t, rows, _c, _x in grids) + PAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="9">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    y = PAD
    for title, rows, cols, cells in grids:
        out.append(f'<text x="{PAD}" y="{y + 12}" font-size="12">{title}</text>')
        y += TITLE
        for (r, c), (lane, reg, e, idx) in sorted(cells.items()):
            x0, y0 = PAD + c * CELL_W, y + r * CELL_H
            col = "#%02x%02x%02x" % _COLOURS[idx % len(_COLOURS)]
            out.append(f'<rect x="{x0}" y="{y0}" width="{CELL_W}" height="{CELL_H}" '
                       f'fill="{col}" stroke="#999" stroke-width="0.5"/>'
                       f'<text x="{x0 + 2}" y="{y0 + 10}">T{lane}</text>'
                       f'<text x="{x0 + 2}" y="{y0 + 20}">{reg}.{e}</text>')
        y += rows * CELL_H + PAD
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_svg(pm, path) -> None:
    write_atomic(Path(path), svg_text(pm).encode("utf-8"))


# ---------------------------------------------------------------- PNG

# 3x5 glyphs, rows top to bottom, 3 bits each (MSB left).
_FONT = {
    "0": (7, 5, 5, 5, 7), "1": (2, 6, 2, 2, 7), "2": (7, 1, 7, 4, 7), "3": (7, 1, 7, 1, 7),
    "4": (5, 5, 7, 1, 1), "5": (7, 4, 7, 1, 7), "6": (7, 4, 7, 5, 7), "7": (7, 1, 1, 1, 1),
    "8": (7, 5, 7, 5, 7), "9": (7, 5, 7, 1, 7), "A": (2, 5, 7, 5, 5), "B": (6, 5, 6, 5, 6),
    "C": (7, 4, 4, 4, 7), "D": (6, 5, 5, 5, 6), "E": (7, 4, 6, 4, 7), "F": (7, 4, 6, 4, 4),
    "G": (7, 4, 5, 5, 7), "H": (5, 5, 7, 5, 5), "I": (7, 2, 2, 2, 7), "K": (5, 5, 6, 5, 5),
    "L": (4, 4, 4, 4, 7), "M": (5, 7, 7, 5, 5), "N": (6, 5, 5, 5, 5), "O": (7, 5, 5, 5, 7),
    "P": (7, 5, 7, 4, 4), "R": (6, 5, 6, 5, 5), "S": (7, 4, 7, 1, 7), "T": (7, 2, 2, 2, 2),
    "U": (5, 5, 5, 5, 7), "W": (5, 5, 7, 7, 5), "X": (5, 5, 2, 5, 5), "Y": (5, 5, 2, 2, 2),
    "%": (5, 1, 2, 4, 5), ".": (0, 0, 0, 0, 2), "[": (6, 4, 4, 4, 6), "]": (3, 1, 1, 1, 3),
    "(": (2, 4, 4, 4, 2), ")": (2, 1, 1, 1, 2), " ": (0, 0, 0, 0, 0), "-": (0, 0, 7, 0, 0),
}
_PX_W, _PX_H = 36, 14


def _draw_text(img, width, x, y, text, colour=(0, 0, 0)):
    for ch in text.upper():
        glyph = _FONT.get(ch, _FONT[" "])
        for gy, bits in enumerate(glyph):
            for gx in range(3):
                if bits & (4 >> gx):
                    o = ((y + gy) * width + x + gx) * 3
                    img[o:o + 3] = bytes(colour)
        x += 4


def png_bytes(pm) -> bytes:
    grids = _grids(pm)
    width = max(cols for _t, _r, cols, _c in grids) * _PX_W + 8
    height = sum(8 + rows * _PX_H + 4 for _t, rows, _c, _x in grids) + 4
    img = bytearray(b"\xff" * (width * height * 3))
    y = 4
    for title, rows, cols, cells in grids:
        _draw_text(img, width, 4, y, title)
        y += 8
        for (r, c), (lane, reg, e, idx) in cells.items():
            x0, y0 = 4 + c * _PX_W, y + r * _PX_H
            fill = bytes(_COLOURS[idx % len(_COLOURS)])
            for yy in range(y0, y0 + _PX_H - 1):
                o = (yy * width + x0) * 3
                img[o:o + 3 * (_PX_W - 1)] = fill * (_PX_W - 1)
            _draw_text(img, width, x0 + 1, y0 + 1, f"T{lane}")
            _draw_text(img, width, x0 + 1, y0 + 7, f"{reg.lstrip('%')}.{e}")
        y += rows * _PX_H + 4
    raw = b"".join(b"\x00" + bytes(img[i * width * 3:(i + 1) * width * 3])
                   for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_png(pm, path) -> None:
    write_atomic(Path(path), png_bytes(pm))
