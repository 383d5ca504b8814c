#!/usr/bin/env bash
# Assemble every good small fixture with ptxas and print a pass/fail table;
# also check that every file in corpus_fixtures/bad/ is rejected.
#
#   scripts/check_fixtures_assemble.sh [ptxas-binary]
#
# Each good file is assembled for the architecture named by its own
# `.target` line (sm_89 for most, sm_90 for shapes_sm90.ptx) with
# `ptxas -arch=ARCH -O0 -c FILE -o /dev/null` (-O0: only acceptance matters).
# Exit status: 0 all as expected, 1 some file misbehaved, 2 no ptxas.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
small="$here/corpus_fixtures/small"
bad="$here/corpus_fixtures/bad"
ptxas=${1:-${PTXAS:-ptxas}}

if ! command -v "$ptxas" >/dev/null 2>&1; then
    echo "ptxas not found (pass its path or set PTXAS)" >&2
    exit 2
fi

failures=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

target_of() {
    # first `.target` directive, CR and trailing blanks stripped; the first
    # comma-separated word is the architecture
    local t
    t=$(tr -d '\r' <"$1" | sed -n 's/^[[:space:]]*\.target[[:space:]]\{1,\}\([A-Za-z0-9_]*\).*/\1/p' | head -n 1)
    echo "${t:-sm_89}"
}

printf '%-28s %-7s %-6s %s\n' "good fixture" "arch" "result" "ptxas message"
printf '%-28s %-7s %-6s %s\n' "------------" "----" "------" "-------------"
for f in "$small"/*.ptx; do
    [ -e "$f" ] || continue
    arch=$(target_of "$f")
    if "$ptxas" -arch="$arch" -O0 -c "$f" -o /dev/null >"$log" 2>&1; then
        res=pass; msg=""
    else
        res=FAIL; msg=$(grep -m 1 -v '^ptxas fatal   : Ptx assembly aborted' "$log" | cut -c1-100)
        failures=$((failures + 1))
    fi
    printf '%-28s %-7s %-6s %s\n' "$(basename "$f")" "$arch" "$res" "$msg"
done

echo
printf '%-28s %-7s %-6s %s\n' "bad fixture" "arch" "result" "ptxas message"
printf '%-28s %-7s %-6s %s\n' "-----------" "----" "------" "-------------"
for f in "$bad"/*.ptx; do
    [ -e "$f" ] || continue
    if "$ptxas" -arch=sm_89 -O0 -c "$f" -o /dev/null >"$log" 2>&1; then
        res=FAIL; msg="accepted, but it should be rejected"
        failures=$((failures + 1))
    else
        res=pass; msg=$(head -n 1 "$log" | sed "s|$bad/||" | cut -c1-100)
    fi
    printf '%-28s %-7s %-6s %s\n' "$(basename "$f")" "sm_89" "$res" "$msg"
done

echo
if [ "$failures" -ne 0 ]; then
    echo "$failures fixture(s) did not behave as expected"
    exit 1
fi
echo "all fixtures behave as expected"
