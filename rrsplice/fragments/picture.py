"""A picture of one phase's fragments: its A, B, C and D tiles with the lane and register of
every element, the way the PTX ISA draws fragment layouts (one cell per matrix element,
`T<lane>` over `<register>.<element>`; cell colour = the register's index in its fragment).

SVG is text; PNG is written without an imaging library (zlib + a 3x5 pixel font), so the
picture needs nothing beyond the standard library. Both are written atomically.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

from ..infra.fsutil import write_atomic
from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError

_COLOURS = [(0xDD, 0xEE, 0xFF), (0xFF, 0xE8, 0xCC), (0xDD, 0xF5, 0xDD), (0xF5, 0xDD, 0xF0),
            (0xEE, 0xEE, 0xCC), (0xCC, 0xEE, 0xEE), (0xE8, 0xE0, 0xFF), (0xFF, 0xDD, 0xDD)]


MATRICES = ("A", "B", "C", "D")
# the most cells a grid may have across or down before the default picture shows only
# tile (0, 0) of each matrix (64 cells: 2,300 px of PNG, legible at 100 %)
DEFAULT_MAX_CELLS = 64


register_codes(__name__, "error", {
    "picture": "a fragment picture that cannot be drawn (no mma shape, a tile out of "
               "range)"})


class PictureError(RRSpliceError):
    code = "picture"


def tile_shape(pm) -> dict:
    """Matrix -> (rows, cols) of one mma's tile, from the phase's shape (`m16n8k32`:
    A 16x32, B 32x8, C and D 16x8)."""
    m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", pm.phase.shape or "")
    if m is None:
        raise PictureError(f"phase {pm.phase.index}: no mma shape to cut tiles from")
    tm, tn, tk = (int(x) for x in m.groups())
    return {"A": (tm, tk), "B": (tk, tn), "C": (tm, tn), "D": (tm, tn)}


def _grids(pm, matrices=None, tile=None) -> list:
    """[(title, rows, cols, {(row, col): (lane, reg, elem, index)})] for the chosen
    matrices (default all four); with `tile` = (i, j), only that tile of each, its cells
    renumbered from 0 and its matrix coordinates in the title."""
    p = pm.phase
    dims = {"A": (p.m, p.k), "B": (p.k, p.n), "C": (p.m, p.n), "D": (p.m, p.n)}
    names = {"A": ("A[row][k]", "row", "k"), "B": ("B[k][n]", "k", "n"),
             "C": ("C[row][n] (bias seeds)", "row", "n"), "D": ("D[row][n]", "row", "n")}
    shapes = tile_shape(pm) if tile is not None else None
    out = []
    for key, frags in (("A", pm.a), ("B", pm.b), ("C", pm.c), ("D", pm.d)):
        if matrices and key not in matrices:
            continue
        rows, cols = dims[key]
        r0, c0 = 0, 0
        title = f"phase {p.index} {names[key][0]} {rows}x{cols}"
        if tile is not None:
            assert shapes is not None  # computed whenever there is a tile
            th, tw = shapes[key]
            r0, c0 = tile[0] * th, tile[1] * tw
            if r0 >= rows or c0 >= cols:
                raise PictureError(f"phase {p.index}: {key} has {rows // th}x{cols // tw} "
                                   f"tiles of {th}x{tw}; there is no tile {tile}")
            title += (f", tile {tile}: {names[key][1]} {r0}-{r0 + th - 1}, "
                      f"{names[key][2]} {c0}-{c0 + tw - 1}")
            rows, cols = th, tw
        cells = {}
        for f in frags:
            for lane, e, r, c, _w in f.elements():
                if r0 <= r < r0 + rows and c0 <= c < c0 + cols:
                    cells[(r - r0, c - c0)] = (lane, f.reg, e, f.index)
        out.append((title, rows, cols, cells))
    return out


def choose(pm, matrices=None, tile=None) -> tuple:
    """(matrices, tile, note) of the picture to draw: what was asked, or -- when nothing
    was and the whole phase is too large to read -- tile (0, 0) of each matrix, with a note
    saying so."""
    if tile is not None or matrices:
        return matrices, tile, None
    big = max(max(r, c) for _t, r, c, _x in _grids(pm, matrices))
    if big <= DEFAULT_MAX_CELLS:
        return matrices, None, None
    return matrices, (0, 0), (f"phase {pm.phase.index} is {pm.phase.geometry}: drew tile "
                              "(0, 0) of each matrix; --tile I,J and --matrix A|B|C|D choose "
                              "others")


CELL_W, CELL_H, PAD, TITLE = 46, 24, 10, 18


def svg_text(pm, matrices=None, tile=None) -> str:
    grids = _grids(pm, matrices, tile)
    width = max(cols for _t, _r, cols, _c in grids) * CELL_W + 2 * PAD
    height = sum(TITLE + rows * CELL_H + PAD for _t, rows, _c, _x in grids) + PAD
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="9">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    y = PAD
    for title, rows, _cols, cells in grids:
        out.append(f'<text x="{PAD}" y="{y + 12}" font-size="12">{title}</text>')
        y += TITLE
        for (r, c), (lane, reg, e, idx) in sorted(cells.items()):
            x0, y0 = PAD + c * CELL_W, y + r * CELL_H
            col = "#{:02x}{:02x}{:02x}".format(*_COLOURS[idx % len(_COLOURS)])
            out.append(f'<rect x="{x0}" y="{y0}" width="{CELL_W}" height="{CELL_H}" '
                       f'fill="{col}" stroke="#999" stroke-width="0.5"/>'
                       f'<text x="{x0 + 2}" y="{y0 + 10}">T{lane}</text>'
                       f'<text x="{x0 + 2}" y="{y0 + 20}">{reg}.{e}</text>')
        y += rows * CELL_H + PAD
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_svg(pm, path, matrices=None, tile=None) -> None:
    write_atomic(Path(path), svg_text(pm, matrices, tile).encode("utf-8"))


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


_GLYPH_ROWS: dict = {}


def _text_rows(text: str, back: bytes) -> list:
    """The five pixel rows of `text` (3x5 glyphs, one blank column after each) in black on
    `back`, as RGB bytes: drawn with five slice assignments instead of a store per
    pixel."""
    key = (text, back)
    hit = _GLYPH_ROWS.get(key)
    if hit is None:
        ink = b"\x00\x00\x00"
        rows = []
        for gy in range(5):
            row = bytearray()
            for ch in text.upper():
                bits = _FONT.get(ch, _FONT[" "])[gy]
                row += b"".join(ink if bits & (4 >> gx) else back for gx in range(3)) + back
            rows.append(bytes(row))
        hit = _GLYPH_ROWS[key] = rows
    return hit


def _draw_text(img, width, x, y, text, back=b"\xff\xff\xff"):
    for gy, row in enumerate(_text_rows(text, back)):
        o = ((y + gy) * width + x) * 3
        img[o:o + len(row)] = row


def png_bytes(pm, matrices=None, tile=None) -> bytes:
    grids = _grids(pm, matrices, tile)
    width = max(cols for _t, _r, cols, _c in grids) * _PX_W + 8
    height = sum(8 + rows * _PX_H + 4 for _t, rows, _c, _x in grids) + 4
    img = bytearray(b"\xff" * (width * height * 3))
    y = 4
    for title, rows, _cols, cells in grids:
        _draw_text(img, width, 4, y, title)
        y += 8
        for (r, c), (lane, reg, e, idx) in cells.items():
            x0, y0 = 4 + c * _PX_W, y + r * _PX_H
            fill = bytes(_COLOURS[idx % len(_COLOURS)])
            for yy in range(y0, y0 + _PX_H - 1):
                o = (yy * width + x0) * 3
                img[o:o + 3 * (_PX_W - 1)] = fill * (_PX_W - 1)
            _draw_text(img, width, x0 + 1, y0 + 1, f"T{lane}", fill)
            _draw_text(img, width, x0 + 1, y0 + 7, f"{reg.lstrip('%')}.{e}", fill)
        y += rows * _PX_H + 4
    raw = b"".join(b"\x00" + bytes(img[i * width * 3:(i + 1) * width * 3])
                   for i in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_png(pm, path, matrices=None, tile=None) -> None:
    write_atomic(Path(path), png_bytes(pm, matrices, tile))
