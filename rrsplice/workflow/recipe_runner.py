"""The process a recipe's own code runs in (started by :mod:`rrsplice.workflow.recipe_process`).

rrsplice never imports a recipe itself: it starts ``python -I`` on this file, which imports
the recipe by the path it is sent, calls ``recipe()`` (and ``stages()``), and answers with
plain data, one JSON document a line. Whatever the recipe does here (exits, forks, patches
modules, prints, starts threads, changes directory) stays in this process: the verdict and
the exit code are computed by rrsplice from the data alone.

Standard library only, and nothing of rrsplice: with ``-I`` neither ``PYTHONPATH`` nor the
script's directory is on ``sys.path``.

Requests (one JSON object a line on stdin): ``{"op": "load", "path": P, "debug": V}``,
``{"op": "call", "fn": ID, "args": [...]}``, ``{"op": "map", "fn": ID, "args": [[...], ...]}``.
Replies: ``{"ok": true, ...}`` or ``{"ok": false, "error": TEXT, "key": KEY}``.

Values are encoded as JSON with tags, so tuples, dicts and functions survive the trip:
``{"t": [...]}`` a tuple, ``{"d": [[key, value], ...]}`` a dict (string keys only),
``{"f": ID, "n": TYPE}`` something callable (called back with ``call``/``map``),
``{"o": TYPE, "r": REPR}`` anything else (a subclass, an object, an integer beyond 64 bits,
a float that is not finite), which rrsplice reports as a value of the wrong type.
"""

import json
import math
import os
import sys

DEBUG_ENV = "D4R_RRSWIN_DEBUG"
MAX_DEPTH = 64
INT_LIMIT = 2 ** 63
UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
NAME_CHARS = UPPER | frozenset("0123456789_")
PID = os.getpid()
FUNCTIONS: dict = {}                # id -> callable, for `call` / `map`


def _opaque(v, why=None):
    name = type(v).__name__
    for base in (dict, list, tuple, str, int, float):
        if isinstance(v, base) and type(v) is not base:
            name = f"{name} (a {base.__name__} subclass)"
            break
    if why is None:
        try:
            why = object.__repr__(v)
        except Exception:           # noqa: BLE001 - any object
            why = "?"
    return {"o": name, "r": str(why)[:200]}


def encode(v, depth=0):
    """`v` as tagged JSON data (see the module docstring); never runs the value's own
    methods (no __repr__, __iter__, __eq__ of a subclass)."""
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        if -INT_LIMIT < v < INT_LIMIT:
            return v
        return _opaque(v, f"an integer of {v.bit_length()} bits")
    if t is float:
        return v if math.isfinite(v) else _opaque(v, float.__repr__(v))
    if depth >= MAX_DEPTH:
        return _opaque(v, f"nested more than {MAX_DEPTH} deep")
    if t is list:
        return [encode(x, depth + 1) for x in v]
    if t is tuple:
        return {"t": [encode(x, depth + 1) for x in v]}
    if t is dict:
        items = []
        for k, x in dict.items(v):
            items.append([k if type(k) is str else encode(k, depth + 1), encode(x, depth + 1)])
        return {"d": items}
    if callable(v):
        i = len(FUNCTIONS)
        FUNCTIONS[i] = v
        return {"f": i, "n": type(v).__name__}
    return _opaque(v)


def _constant(name):
    """An upper-case module name (`A_REGS`): the constants rrsplice reads."""
    return name[:1] in UPPER and all(c in NAME_CHARS for c in name)


def _summary(exc, path):
    """`TypeError: ...` plus the last line of the recipe file involved, if any."""
    import traceback
    where = ""
    for fr in reversed(traceback.extract_tb(exc.__traceback__)):
        try:
            same = os.path.realpath(fr.filename) == os.path.realpath(path)
        except (OSError, ValueError):
            same = False
        if same:
            where = f" (line {fr.lineno}" + (f": {fr.line.strip()}" if fr.line else "") + ")"
            break
    try:
        text = str(exc)
    except BaseException:       # noqa: BLE001 - a hostile __str__
        text = "?"
    return f"{type(exc).__name__}: {text}"[:2000] + where


def _user(path, what, fn, *args):
    """Run the recipe's own code; (True, value) or (False, message). A fork inside it never
    answers: only this process speaks to rrsplice."""
    try:
        value = fn(*args)
        ok = True
    except BaseException as exc:    # noqa: BLE001 - users' code, any exit included
        value, ok = f"{what} raised {_summary(exc, path)}", False
    if os.getpid() != PID:
        os._exit(0)
    return ok, value


STATE = {"path": None}


def _load(req):
    import importlib.util
    path = req["path"]
    STATE["path"] = path
    debug = req.get("debug")
    if debug is not None:
        os.environ[DEBUG_ENV] = debug
    stem = os.path.splitext(os.path.basename(path))[0]
    modname = "_rrsplice_recipe_" + "".join(c if c.isalnum() else "_" for c in stem)
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        return {"ok": False, "error": "cannot be imported as a Python module (is it a .py "
                "file?)"}
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
        failure = None
    except SyntaxError as exc:
        failure = f"does not import: SyntaxError: {exc.msg} (line {exc.lineno})"
    except BaseException as exc:    # noqa: BLE001 - users' code, any exit included
        failure = f"does not import: {_summary(exc, path)}"
    if os.getpid() != PID:
        os._exit(0)
    if failure:
        return {"ok": False, "error": failure}
    fn = mod.__dict__.get("recipe")
    if fn is None:
        return {"ok": False, "error": "defines no recipe() function", "key": "recipe"}
    if not callable(fn):
        return {"ok": False, "error": "`recipe` is not a function", "key": "recipe"}
    ok, raw = _user(path, "recipe()", fn)
    if not ok:
        return {"ok": False, "error": raw, "key": "recipe"}
    if type(raw) is dict and "file" in dict.keys(raw):
        f = dict.get(raw, "file")
        if type(f) is not str and isinstance(f, os.PathLike):
            ok, f = _user(path, "file=...: os.fspath()", os.fspath, f)
            if not ok:
                return {"ok": False, "error": f, "key": "file"}
            raw = dict(dict.items(raw), file=f)
    reply = {"ok": True, "raw": encode(raw), "debug_env": os.environ.get(DEBUG_ENV)}
    if type(reply["debug_env"]) is not str:
        reply["debug_env"] = None
    attrs = []
    for name, v in list(dict.items(mod.__dict__)):
        if type(name) is str and (_constant(name) or name == "debug_block"):
            attrs.append([name, encode(v)])
    doc = mod.__dict__.get("__doc__")
    reply["doc"] = doc if type(doc) is str else None
    reply["attrs"] = attrs
    st = mod.__dict__.get("stages")
    if st is not None:
        if not callable(st):
            reply["stages"] = {"ok": False, "error": "`stages` must be a function returning "
                               "{name: (line, [regs])}"}
        else:
            ok, table = _user(path, "stages()", st)
            reply["stages"] = ({"ok": True, "value": encode(table)} if ok
                               else {"ok": False, "error": table})
    return reply


def _call(fn_id, args):
    fn = FUNCTIONS.get(fn_id)
    if fn is None:
        return {"ok": False, "error": f"no function {fn_id}"}
    ok, value = _user(STATE["path"], args[0], fn, *args[1])
    return {"ok": True, "value": encode(value)} if ok else {"ok": False, "error": value}


def main():
    # the protocol uses private copies of stdin/stdout; fd 0 becomes /dev/null and fd 1
    # the error stream, so what the recipe (or anything it starts) prints never reaches
    # rrsplice's own output
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    try:
        os.dup2(2, 1)
    except OSError:
        os.dup2(null, 1)
    cwd = os.getcwd()
    for line in inp:
        try:
            req = json.loads(line)
            op = req["op"]
            if op == "load":
                reply = _load(req)
            elif op == "call":
                reply = _call(req["fn"], (req["what"], req["args"]))
            elif op == "map":
                reply = {"ok": True, "values": [_call(req["fn"], (req["what"], a))
                                                for a in req["args"]]}
            else:
                reply = {"ok": False, "error": f"unknown request {op!r}"}
        except BaseException as exc:    # noqa: BLE001 - a failure here is the reply
            if os.getpid() != PID:
                os._exit(0)
            reply = {"ok": False, "error": f"the recipe process failed: {_summary(exc, '')}"}
        for stream in (sys.stdout, sys.stderr):     # the recipe's prints, before the reply
            try:
                stream.flush()
            except BaseException:   # noqa: BLE001 - a stream the recipe replaced or closed
                pass
        try:
            os.chdir(cwd)
        except OSError:
            pass
        data = json.dumps(reply, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n"
        out.write(data)
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
