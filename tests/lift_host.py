"""The minimum host-run path for lifted bodies (rrsplice.lift): a generated body and its
`rr_lift.h` compiled with g++ for the host (-DRR_HOST_TEST), a warp's lanes as host
threads that meet at every lane exchange and barrier, global memory as one host buffer.

`run_body` calls the body once per lane with that lane's arguments and returns, per lane,
the bytes of the body's return value (a `.param` return) and the final global buffer.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_MAIN = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#define RR_HOST_TEST 1
#include "rr_lift.h"
thread_local rr_u32 rr_host_tid[3], rr_host_ntid[3], rr_host_ctaid[3];
alignas(16) rr_u8 rr_host_shared[1 << 22];
static std::barrier<> *rr_bar;
static rr_u32 rr_slots[32];
rr_u32 rr_host_exchange(rr_u32 v, int lane)
{
    rr_slots[rr_sreg_laneid()] = v;
    rr_bar->arrive_and_wait();
    const rr_u32 r = rr_slots[lane & 31];
    rr_bar->arrive_and_wait();
    return r;
}
void rr_host_barrier(void) { rr_bar->arrive_and_wait(); }
@PRELUDE@
#include "body.cu"
static rr_u32 rr_words[@WORDS@];
int main()
{
    const int lanes = @LANES@;
    for (int i = 0; i < @WORDS@; ++i)
        if (scanf("%u", &rr_words[i]) != 1) return 2;
    static unsigned long long args[@LANES@][@NARGS@ + 1];
    for (int l = 0; l < lanes; ++l)
        for (int j = 0; j < @NARGS@; ++j) {
            unsigned long long v; int is_ptr;
            if (scanf("%llu %d", &v, &is_ptr) != 2) return 2;
            args[l][j] = is_ptr ? (unsigned long long)(__SIZE_TYPE__)((rr_u8 *)rr_words + v) : v;
        }
    static unsigned char out[@LANES@][@RETBYTES@ + 1];
    std::barrier<> bar(lanes);
    rr_bar = &bar;
    std::vector<std::thread> ts;
    for (int l = 0; l < lanes; ++l)
        ts.emplace_back([l, lanes]() {
            rr_host_tid[0] = l; rr_host_tid[1] = 0; rr_host_tid[2] = 0;
            rr_host_ntid[0] = lanes; rr_host_ntid[1] = 1; rr_host_ntid[2] = 1;
            rr_host_ctaid[0] = rr_host_ctaid[1] = rr_host_ctaid[2] = 0;
            @CALL@
        });
    for (auto &t : ts) t.join();
    for (int l = 0; l < lanes; ++l) {
        for (int b = 0; b < @RETBYTES@; ++b) printf("%u ", out[l][b]);
        printf("\n");
    }
    for (int i = 0; i < @WORDS@; ++i) printf("%u ", rr_words[i]);
    printf("\n");
    for (int i = 0; i < @SHARED@; ++i) printf("%u ", rr_host_shared[i]);
    printf("\n");
    return 0;
}
"""


def build(d: Path, body_text: str, header_text: str, callee: str, arg_types: list,
          ret_bytes: int, lanes: int, words: int, shared: int = 0, opt: str = "-O1",
          prelude: str = "") -> Path:
    """Write and compile the host program; returns the executable. The run prints the
    first `shared` bytes of `.shared` after the call. `opt`: g++'s optimisation level
    (-O0 compiles a whole-layer body several times faster; IEEE results are the same).
    `prelude`: C++ placed before the body (after the harness's own definitions)."""
    (d / "body.cu").write_text(body_text)
    (d / "rr_lift.h").write_text(header_text)
    args = ", ".join(f"({t})args[l][{j}]" for j, t in enumerate(arg_types))
    call = (f"auto r = {callee}({args}); std::memcpy(out[l], &r, {ret_bytes});"
            if ret_bytes else f"{callee}({args});")
    src = _MAIN.replace("@WORDS@", str(words)).replace("@LANES@", str(lanes)) \
        .replace("@NARGS@", str(len(arg_types))).replace("@RETBYTES@", str(ret_bytes)) \
        .replace("@CALL@", call).replace("@SHARED@", str(shared)).replace("@PRELUDE@", prelude)
    (d / "main.cpp").write_text(src)
    exe = d / "host_body"
    subprocess.run(["g++", "-std=c++20", opt, "-ffp-contract=off", "-pthread", "-w",
                    "-x", "c++", str(d / "main.cpp"), "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    return exe


def run(exe: Path, words: list, lane_args: list, shared: bool = False) -> tuple:
    """(per-lane return bytes, final words[, .shared bytes]) of one run."""
    text = " ".join(str(w) for w in words) + "\n"
    for args in lane_args:
        text += " ".join(f"{v} {int(p)}" for v, p in args) + "\n"
    exe.with_suffix(".in").write_text(text)      # kept beside the program, to rerun it
    res = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True,
                         timeout=60)
    lines = res.stdout.split("\n")[:-1]           # every section ends its line
    smem = bytes(int(x) for x in lines[-1].split())
    lines = lines[:-1]
    rets = [bytes(int(x) for x in ln.split()) for ln in lines[:-1]]
    words_after = [int(x) for x in lines[-1].split()]
    return (rets, words_after, smem) if shared else (rets, words_after)
