"""Hostile inputs for the fuzz suite (tests/test_fuzz_*.py) and the long campaign
(scripts/fuzz.py): mutations of real PTX fixtures and generated hostile recipes, plus the
invariant checks every outcome must meet.

Everything takes a `random.Random`, so hypothesis (through `st.randoms()`) and the
campaign's seeded generator drive the same code. A run never touches anything outside the
directory it is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "corpus_fixtures" / "small").glob("*.ptx")) + sorted(
    p for p in (ROOT / "corpus_fixtures" / "bad").glob("*.ptx"))

# a diagnostic's first line: path:line:col: error: message
DIAGNOSTIC = re.compile(r"^[^\n]+:\d+:\d+: error: \S")

TOKENS = [b"{", b"}", b"(", b")", b"[", b"]", b";", b",", b":", b"::", b"@", b"!", b"%",
          b"\"", b"'", b"\\", b"//", b"/*", b"*/", b"\n", b"\r\n", b"\r", b"\t", b" ",
          b"\x00", b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x9f\x92\xa9",
          b".reg", b".reg .b32 %r<5>;", b".param", b".shared", b".global", b".entry",
          b".func", b".visible", b".extern", b".version", b".target", b".address_size",
          b".loc", b".pragma \"nounroll\";", b".branchtargets", b".callprototype",
          b"%r1", b"%rd1", b"%p1", b"%tid.x", b"$L__BB0_1", b"$L__BB0_1:", b"bra", b"bra.uni",
          b"mov.u32", b"add.s32", b"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
          b"call.uni", b"ret;", b"0x", b"0f3F800000", b"0d", b"-", b"+", b"<", b">", b"=",
          b"9" * 40, b"9" * 5000, b"1e309", b"0b", b"00", b"|", b"_"]


def fixture(rnd) -> tuple[str, bytes]:
    p = rnd.choice(FIXTURES)
    return p.name, p.read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


def mutate(data: bytes, rnd) -> tuple[bytes, list[str]]:
    """1-4 random edits of `data`: truncate, flip, insert bytes or tokens, delete a span,
    duplicate / swap / nest lines, repeat a token many times. Returns the result and the
    names of the edits made."""
    done = []
    for _ in range(rnd.randint(1, 4)):
        op = rnd.choice(OPS)
        data = op(data, rnd)
        done.append(op.__name__)
    return data, done


def truncate(data, rnd):
    return data[:rnd.randint(0, len(data))]


def flip(data, rnd):
    if not data:
        return data
    i = rnd.randrange(len(data))
    return data[:i] + bytes([data[i] ^ (1 << rnd.randrange(8))]) + data[i + 1:]


def insert_bytes(data, rnd):
    i = rnd.randint(0, len(data))
    junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
    return data[:i] + junk + data[i:]


def insert_token(data, rnd):
    i = rnd.randint(0, len(data))
    return data[:i] + rnd.choice(TOKENS) + data[i:]


def delete_span(data, rnd):
    if not data:
        return data
    i = rnd.randrange(len(data))
    j = min(len(data), i + rnd.randint(1, 200))
    return data[:i] + data[j:]


def duplicate_lines(data, rnd):
    ls = _lines(data)
    i = rnd.randrange(len(ls))
    j = min(len(ls), i + rnd.randint(1, 20))
    return b"".join(ls[:j] + ls[i:j] * rnd.randint(1, 3) + ls[j:])


def swap_lines(data, rnd):
    ls = _lines(data)
    i, j = rnd.randrange(len(ls)), rnd.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return b"".join(ls)


def nest(data, rnd):
    ls = _lines(data)
    i = rnd.randrange(len(ls))
    j = min(len(ls), i + rnd.randint(1, 30))
    depth = rnd.choice([1, 2, 5, 50, 300, 1500, 3000])
    return b"".join(ls[:i] + [b"{" * depth + b"\n"] + ls[i:j] + [b"}" * depth + b"\n"]
                    + ls[j:])


def repeat_token(data, rnd):
    i = rnd.randint(0, len(data))
    return data[:i] + rnd.choice(TOKENS) * rnd.choice([10, 100, 2000]) + data[i:]


def long_comment(data, rnd):
    i = data.rfind(b"}")
    i = rnd.randint(0, len(data)) if i < 0 or rnd.random() < 0.5 else i
    body = (b"// " + b"x" * rnd.choice([100, 5000, 60000]) + b"\n") if rnd.random() < 0.5 \
        else (b"/* " + b"y" * rnd.choice([100, 5000, 60000]) + b" */")
    return data[:i] + body + data[i:]


OPS = [truncate, flip, insert_bytes, insert_token, delete_span, duplicate_lines, swap_lines,
       nest, repeat_token, long_comment]


# ------------------------------------------------------------------ parse invariants

def check_parse(data: bytes, name: str) -> str:
    """Parse `data` through the API. Returns the outcome ("ok" or "error:<kind>") or
    raises AssertionError when an invariant is broken: success must round-trip
    byte-exactly; failure must be a typed error whose diagnostic starts with
    name:line:col. Anything else (a traceback) propagates."""
    from rrsplice.ptx.emit import emit
    from rrsplice.ptx.errors import ParseError, RRSpliceError
    from rrsplice.ptx.parser import parse_bytes
    try:
        m = parse_bytes(data, name)
    except ParseError as exc:
        first = exc.diagnostic().splitlines()[0]
        assert DIAGNOSTIC.match(first) and first.startswith(name + ":"), first
        assert exc.line >= 1 and exc.column >= 1
        return "error:parse"
    except RRSpliceError as exc:
        raise AssertionError(f"untyped position: {exc.diagnostic()}") from None
    assert emit(m) == data, "success without a byte-exact round trip"
    return "ok"


# ------------------------------------------------------------------ hostile recipes

MODULE_TEXT = (ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx").read_bytes()

_VALUES = [
    "None", "True", "0", "-1", "1", "93", "114", "10**400", "2**63", "1.5", "'93'", "b'x'",
    "[]", "{}", "()", "(93, 114)", "(114, 93)", "(93, 93)", "(0, 5)", "(93, 10**6)",
    "[93, 114]", "(93, 114, 5)", "('a', 'b')", "object()", "print", "lambda *a: 1/0",
    "'\\tcall.uni f;\\n'", "'\\tret;\\n'", "'}\\n.visible .entry x()\\n{\\n'",
    "'\\ud800'", "'\\x00'", "'x' * 100000", "'{' * 2000", "'// ' + 'c' * 50000 + '\\n'",
    "'.extern .func f;'", "'.extern .func f(.param .b32 a);'", "'../../etc/passwd'",
    "'/dev/null'", "'m.ptx'", "'nope.ptx'", "'n' * 300", "'/' + 'n/' * 3000", "'m.ptx\\x00'",
    "'.'", "'/'", "'out'", "'~'", "'m.ptx/'", "'%r1'", "(84, ['%r1'])", "(84, ['%zz'])",
    "(10**9, ['%r1'])", "(84, '%r1')",
]
_KEYS = ["file", "entry", "cut_call", "call", "extern", "debug", "debug_block", "cut_after",
         "cut_check", "tail", "delete", "delete_check", "insert", "replace_body", "stub",
         "bogus", 1, None]
_BODIES = [
    "return d",
    "import sys; sys.exit(0)",
    "import sys; sys.exit(1)",
    "raise KeyboardInterrupt",
    "raise SystemExit('bye')",
    "raise MemoryError",
    "raise RecursionError",
    "raise GeneratorExit",
    "print('noise on stdout'); return d",
    "import sys; sys.stdout.write('{\"ok\": true}'); return d",
    "return None",
    "return [d]",
    "return 'dict(file=1)'",
    "return {k: v for k, v in d.items()}",
    "return recipe()",
    "import os; os._exit(0)",
    "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "class D(dict):\n        def __iter__(self): raise RuntimeError\n    return D(d)",
    "class P:\n        def __fspath__(self): raise ValueError\n    d['file'] = P(); return d",
    "d['cut_call'] = (10**5000, 10**5000 + 1); return d",
]
_MODULE_LEVEL = [
    "",
    "import sys\nsys.exit(0)\n",
    "raise SystemExit(3)\n",
    "print('imported')\n",
    "def stages():\n    return {'../evil': (84, ['%r1'])}\n",
    "def stages():\n    return {'a/b': (84, ['%r1'])}\n",
    "def stages():\n    return {'ok': (84, ['%r1'])}\n",
    "def stages():\n    import sys; sys.exit(0)\n",
    "STAGES = 5\n",
    "def debug_block(regs):\n    raise SystemExit(0)\n",
    "def debug_block(regs):\n    return '\\ud800'\n",
    "LAYER = '../x'\n",
    "MODULE = '/dev/null'\n",
    "recipe = 5\n",
    "syntax error here(\n",
    "this_name_is_undefined\n",
    "import atexit, os\natexit.register(os._exit, 0)\n",
    "import os\nos.write(1, b'{\"ok\": true}\\n')\n",
    "A_REGS = [object()]\nRET_REGS = 10**5000\n",
    "def debug_block(regs):\n    import os; os._exit(0)\n",
]


# well-formed recipes of every form for cfg_loops.ptx, which the generator then perturbs,
# so that many hostile recipes get past loading into the checks and the splice
_FORMS = [
    ["'file': 'm.ptx'"],
    ["'file': 'm.ptx'", "'cut_call': (93, 114)", "'call': '\\tcall.uni f, (%r1);\\n'",
     "'extern': '.extern .func f(.param .b32 a);'"],
    ["'file': 'm.ptx'", "'debug': (84, ['%r1'])"],
    ["'file': 'm.ptx'", "'delete': (93, 114)", "'insert': '\\tmov.u32 %r5, 0;\\n'"],
    ["'file': 'm.ptx'", "'replace_body': True", "'stub': '\\tret;\\n'"],
    ["'file': 'm.ptx'", "'cut_after': 100", "'tail': '\\tret;\\n}\\n'"],
]


def recipe_source(rnd) -> str:
    """A hostile recipe: a well-formed recipe of a random form (or nothing) with random
    keys set to random (often wrong) values, and code that exits, raises, prints or
    misbehaves at import, in recipe(), stages() or debug_block."""
    items = list(rnd.choice(_FORMS)) if rnd.random() < 0.7 else (
        ["'file': 'm.ptx'"] if rnd.random() < 0.8 else [])
    for _ in range(rnd.choice([0, 0, 1, 1, 2, 3])):
        k = rnd.choice(_KEYS)
        items.append(f"{k!r}: {rnd.choice(_VALUES)}")
    body = rnd.choice(_BODIES) if rnd.random() < 0.4 else "return d"
    top = rnd.choice(_MODULE_LEVEL) if rnd.random() < 0.4 else ""
    return (top + "\n\ndef recipe():\n    d = {" + ", ".join(items) + "}\n    "
            + body.replace("; ", "\n    ") + "\n")


# code that must not change rrsplice's answer: it runs in the recipe's own process, so the
# outcome (exit code, stdout) is the same as without it
NOISE = [
    "import os\nos.write(1, b'{\"errors\": 0}\\n')\n",
    "import subprocess\nsubprocess.run(['echo', '{}'])\n",
    "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.2), "
    "print('late'))).start()\n",
    "import threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()\n",
    "import os\nos.fork()\n",
    "import os\nos.chdir('/')\n",
    "import atexit, os\natexit.register(os._exit, 0)\n",
    "import atexit, os\natexit.register(os._exit, 1)\n",
    "import sys\nsys.stdout = sys.stderr = None\n",
    "import sys\nsys.path.insert(0, {root!r})\nimport rrsplice.check.report as _r\n"
    "_r.Report.ok = property(lambda self: True)\n_r.Report.errors = property(lambda s: [])\n",
    "import sys\nsys.path.insert(0, {root!r})\nimport rrsplice.workflow.splice as _s\n"
    "_s.apply = lambda *a, **k: None\n",
]


def noisy_recipe_pair(rnd) -> tuple[str, str]:
    """(hostile, benign): one recipe of a random form for cfg_loops.ptx, with and without
    random code (prints to fd 1, subprocesses, threads, fork, chdir, atexit exits, patches
    of rrsplice) at import and in recipe(); both must give the same outcome."""
    items = rnd.choice(_FORMS) + (["'cut_call': (93, 114)", "'call': '\\tcall.uni f, (%r1);'"]
                                  if rnd.random() < 0.2 else [])
    seen, keep = set(), []
    for it in reversed(items):          # a later key wins, as in a dict display
        k = it.split(":", 1)[0]
        if k not in seen:
            seen.add(k)
            keep.append(it)
    body = "    d = {" + ", ".join(reversed(keep)) + "}\n    return d\n"
    top = "".join(rnd.sample(NOISE, rnd.randint(1, 3))).replace("{root!r}", repr(str(ROOT)))
    inner = rnd.choice(NOISE).replace("{root!r}", repr(str(ROOT)))
    inner = "".join("    " + ln + "\n" for ln in inner.splitlines())
    return (top + "\n\ndef recipe():\n" + inner + body, "\n\ndef recipe():\n" + body)


def recipe_args(rnd, work: Path) -> list[str]:
    """A command line to run a hostile recipe with (inside `work`)."""
    out = str(work / "out" / "o.ptx")
    return rnd.choice([
        ["check", "r.py", "--corpus", str(work)],
        ["check", "r.py", "--corpus", str(work), "--json"],
        ["apply", "r.py", "--corpus", str(work), "-o", out],
        ["apply", "r.py", "--corpus", str(work), "-o", out, "--json"],
        ["apply", "r.py", "--corpus", str(work), "--debug", "ok"],
        ["apply", "r.py", "--corpus", str(work), "--debug", "../evil", "-o", str(work / "out")],
        ["apply", "r.py", "--corpus", str(work), "-o", str(work / "r.py")],
        ["apply", "r.py", "--corpus", str(work), "-o", str(work / "m.ptx")],
    ])


def snapshot(root: Path, skip: tuple = ()) -> dict:
    """path -> SHA-256 of every file under `root` (symlinks by their target text)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip and d != "__pycache__"]
        for f in filenames:
            p = Path(dirpath) / f
            try:
                if p.is_symlink():
                    out[str(p)] = "->" + os.readlink(p)
                else:
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                out[str(p)] = "?"
    return out


def unintended_writes(before: dict, after: dict, allowed_dirs: tuple) -> list[str]:
    """Files changed, created or removed outside `allowed_dirs`."""
    bad = []
    for p in sorted(set(before) | set(after)):
        if before.get(p) != after.get(p) and not any(p == str(d) or p.startswith(str(d) + os.sep)
                                                      for d in allowed_dirs):
            bad.append(p)
    return bad


def run_cli(args: list[str], cwd: Path):
    """Run the CLI in-process (click's test runner) from `cwd`; returns (exit code,
    stdout, stderr, exception or None). An exception other than SystemExit is a
    traceback the user would have seen."""
    from click.testing import CliRunner

    from rrsplice.cli import main
    old = os.getcwd()
    os.chdir(cwd)
    try:
        try:
            runner = CliRunner(mix_stderr=False)
        except TypeError:                     # click >= 8.2 always keeps them apart
            runner = CliRunner()
        res = runner.invoke(main, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    exc = res.exception if not isinstance(res.exception, SystemExit) else None
    return res.exit_code, res.stdout, res.stderr, exc


def check_cli_outcome(code: int, stdout: str, stderr: str, exc, args: list[str]) -> str:
    """Every CLI outcome is exit 0, or 1/2 with a message on stderr; never a traceback;
    `--json` output is one JSON document."""
    import json
    assert exc is None, f"traceback: {type(exc).__name__}: {exc}"
    assert "Traceback (most recent call last)" not in stdout + stderr
    assert code in (0, 1, 2), f"exit {code}"
    if "--json" in args and stdout.strip():
        json.loads(stdout)
    if code == 2:
        assert stderr.strip() or ("--json" in args and stdout.strip()), "exit 2, no message"
    return {0: "ok", 1: "findings", 2: "error"}[code]


# ------------------------------------------------------------------ hostile corpora

def hostile_corpus(rnd, root: Path) -> list[dict]:
    """Build a corpus directory at `root` mixing copies of corpus_fixtures/small/*.ptx with
    special entries named *.ptx (FIFOs, symlink loops, dangling links, a link to a device or
    /proc file, a directory, an unreadable, an empty and an over-limit file, a non-UTF-8 name).
    Returns one dict per entry: `name` (bytes), `kind`, and the expected outcome of the two
    corpus commands with `RRSPLICE_MAX_INPUT_MB=1`:
    `survey` (`descriptor --all`, which walks regular files only): "ok" a row without error,
    "error" a row naming why, "absent" no row (not a regular file, never opened);
    `family` (`apply --all`, which reads every *.ptx): "read", or "warned" (a skip warning
    naming the path and the code)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    small = sorted((ROOT / "corpus_fixtures" / "small").glob("*.ptx"))
    out = []

    def add(name: bytes, kind: str, survey: str, family: str, code: str = "") -> None:
        out.append({"name": name, "kind": kind, "survey": survey, "family": family,
                    "code": code})

    def path(name: bytes) -> bytes:
        return os.fsencode(root) + b"/" + name

    for i, src in enumerate(rnd.sample(small, rnd.randint(2, 4))):
        name = b"f%d_%s" % (i, os.fsencode(src.name))
        Path(os.fsdecode(path(name))).write_bytes(src.read_bytes())
        add(name, "fixture", "ok", "read")
    weird = rnd.choice([b"\xff\xfe", b"caf\xe9", b"\xed\xa0\x80"]) + b"_bad_utf8.ptx"
    with open(path(weird), "wb") as f:
        f.write(rnd.choice(small).read_bytes())
    add(weird, "non-utf8-name", "ok", "read")
    for i in range(rnd.randint(1, 2)):
        os.mkfifo(path(b"fifo%d.ptx" % i))
        add(b"fifo%d.ptx" % i, "fifo", "absent", "warned", "not-a-file")
    os.symlink(b"loop_b.ptx", path(b"loop_a.ptx"))
    os.symlink(b"loop_a.ptx", path(b"loop_b.ptx"))
    add(b"loop_a.ptx", "symlink-loop", "absent", "warned", "symlink-loop")
    add(b"loop_b.ptx", "symlink-loop", "absent", "warned", "symlink-loop")
    os.symlink(b"nowhere/missing.ptx", path(b"dangling.ptx"))
    add(b"dangling.ptx", "dangling-symlink", "absent", "warned", "no-such-file")
    if rnd.random() < 0.5:
        os.symlink(b"/dev/zero", path(b"zero.ptx"))
        add(b"zero.ptx", "link-to-device", "absent", "warned", "not-a-file")
    else:                         # a regular file to stat() that never ends within the limit
        os.symlink(b"/proc/self/pagemap", path(b"pagemap.ptx"))
        add(b"pagemap.ptx", "link-to-proc", "error", "warned", "input-too-large")
    os.mkdir(path(b"x.ptx"))
    add(b"x.ptx", "directory", "absent", "warned", "not-a-file")
    locked = path(b"locked.ptx")
    with open(locked, "wb") as f:
        f.write(rnd.choice(small).read_bytes())
    os.chmod(locked, 0)
    readable = os.access(locked, os.R_OK)           # root reads it anyway
    add(b"locked.ptx", "unreadable", "ok" if readable else "error",
        "read" if readable else "warned", "" if readable else "cannot-read")
    Path(os.fsdecode(path(b"empty.ptx"))).write_bytes(b"")
    add(b"empty.ptx", "empty", "error", "read")
    big = rnd.choice(small).read_bytes()
    with open(path(b"big.ptx"), "wb") as f:
        f.write(big + b"// pad\n" * ((2 << 20) // 7 + 1))
    add(b"big.ptx", "over-limit", "error", "warned", "input-too-large")
    return out


def _listing(root) -> dict:
    """name -> what the entry is (mode, link target or content hash), read without opening
    anything that is not a regular file."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            what = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                what += (os.readlink(p),)
            elif stat.S_ISREG(st.st_mode):
                try:
                    with open(p, "rb") as f:
                        what += (hashlib.sha256(f.read()).hexdigest(),)
                except OSError:
                    what += (st.st_size, st.st_mtime_ns)
            out[p] = what
    return out


def _run_corpus_cli(args, work: Path, timeout: float):
    """Run the CLI in a child process (a hang is bounded); (exit code, stdout, stderr)."""
    env = dict(os.environ, RRSPLICE_MAX_INPUT_MB="1", RRSPLICE_NO_CACHE="1",
               XDG_CACHE_HOME=str(work / "cache"), PYTHONPATH=str(ROOT))
    try:
        r = subprocess.run([sys.executable, "-m", "rrsplice", *args], cwd=ROOT, env=env,
                           check=False, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"rrsplice {' '.join(args)} did not finish in {timeout:.0f} s "
                             "(a FIFO read?)") from None
    stderr = r.stderr.decode("utf-8", "surrogateescape")
    assert r.returncode in (0, 1, 2), (r.returncode, stderr[-2000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    return r.returncode, r.stdout, stderr


def check_hostile_corpus(rnd, work: Path, timeout: float = 120.0) -> int:
    """Build a hostile corpus under `work` and run the survey (`descriptor --all --json`)
    and `apply recipes/tiny_family.py --all` over it with RRSPLICE_MAX_INPUT_MB=1: each ends
    in time with exit 0/1/2 and no traceback, every entry has the outcome hostile_corpus
    promises, and the corpus is unchanged. Raises AssertionError; returns the entry count."""
    corpus = work / "corpus"
    entries = hostile_corpus(rnd, corpus)
    assert {e["kind"] for e in entries} >= {"fixture", "fifo", "symlink-loop", "directory",
                                            "dangling-symlink", "empty", "over-limit"}
    before = _listing(corpus)
    full = {e["name"]: os.fsencode(corpus) + b"/" + e["name"] for e in entries}
    try:
        # the survey: one row per entry of every regular module, errors as rows
        code, out, _err = _run_corpus_cli(["descriptor", "--all", str(corpus), "--json"],
                                          work, timeout)
        doc = json.loads(out)
        by_module: dict = {}
        for row in doc["rows"]:
            by_module.setdefault(os.fsencode(row["module"]), []).append(row)
        assert set(by_module) <= set(full.values()), "a row for something not in the corpus"
        for e in entries:
            rows = by_module.get(full[e["name"]], [])
            if e["survey"] == "absent":
                assert not rows, (e, rows)
            elif e["survey"] == "ok":
                assert rows and all(r["error"] is None and r["entry"] for r in rows), (e, rows)
            else:
                assert len(rows) == 1 and rows[0]["error"], (e, rows)
        assert doc["failed"] == sum(e["survey"] == "error" for e in entries)

        # the family walk: every *.ptx read or named in a skip warning with its code
        code, _out, err = _run_corpus_cli(
            ["apply", "recipes/tiny_family.py", "--all", str(corpus)], work, timeout)
        assert code == 0, err[-2000:]
        lines = err.splitlines()
        for e in entries:
            p = os.fsdecode(full[e["name"]])
            named = [ln for ln in lines if ln.startswith(p + ":")]
            if e["family"] == "read":
                assert not named, (e, named)
            else:
                pat = re.compile(re.escape(p) + r"(:\d+:\d+)?: warning: .+ \["
                                 + re.escape(e["code"]) + r"\]$")
                assert any(pat.match(ln) for ln in named), (e, named)
        assert _listing(corpus) == before, "the corpus directory changed"
    finally:
        locked = corpus / "locked.ptx"
        if locked.exists():
            os.chmod(locked, 0o600)
    return len(entries)
