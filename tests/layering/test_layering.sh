#!/bin/bash
# test_layering.sh: tests for tools/check_layering.sh.
#
# usage: test_layering.sh SOURCE_ROOT
#
# 1. The real source tree must pass (no upward includes).
# 2. For each injected violation, a scratch copy of the module folders gets one
#    bad #include appended to a chosen file; the checker must exit 1 and print
#    that file and line.  One allowed include (compiler/ -> ir/) must stay OK.
# Prints 'N passed, N failed' at the end; exit status 0 only if all passed.
set -u
root=${1:?usage: test_layering.sh SOURCE_ROOT}
check="$root/tools/check_layering.sh"
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

out=$("$check" "$root" 2>&1); rc=$?
if [ $rc -eq 0 ]; then ok "source tree is clean"; else bad "source tree: rc=$rc"; echo "$out"; fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfcc-layering.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# inject FILE INCLUDE-LINE EXPECT(0|1)
inject() {
    local file=$1 line=$2 expect=$3 copy rc out n
    copy="$tmp/t$((pass + fail))"
    mkdir -p "$copy"
    for m in runtime ir passes codegen targets compiler; do
        [ -d "$root/$m" ] && cp -r "$root/$m" "$copy/$m"
    done
    mkdir -p "$(dirname "$copy/$file")"
    touch "$copy/$file"
    printf '%s\n' "$line" >> "$copy/$file"
    n=$(wc -l < "$copy/$file")
    out=$("$check" "$copy" 2>&1); rc=$?
    if [ "$expect" = 1 ]; then
        if [ $rc -eq 1 ] && grep -qF "$file:$n: " <<<"$out"; then ok "$file: '$line' rejected"
        else bad "$file: '$line' not rejected (rc=$rc)"; echo "$out"; fi
    else
        if [ $rc -eq 0 ]; then ok "$file: '$line' allowed"
        else bad "$file: '$line' wrongly rejected (rc=$rc)"; echo "$out"; fi
    fi
}

inject runtime/tcrt.c          '#include "ir/ir.h"' 1
inject runtime/kernels/new.c   '#include "../../passes/passes.h"' 1
inject ir/graph.c              '#include "passes/passes.h"' 1
inject passes/dce.c            '#include "codegen/codegen.h"' 1
inject codegen/cg_util.c       '#include "targets/targets.h"' 1
inject codegen/cg_util.c       '#include "tensorflow/core/framework/graph.pb-c.h"' 1
inject targets/targets.c       '#include "compiler/frontend/frontend.h"' 1
inject compiler/driver.c       '#include "tests/whatever.h"' 1
inject ir/print.c              '#include <protobuf-c/protobuf-c.h>' 1
inject ir/print.c              '#include "no_such_header.h"' 1
inject compiler/driver.c       '#include "ir/ir.h"' 0
inject targets/targets.c       '#include "tfcc_config.h"' 0
inject passes/dce.c            '#include "tcrt_kernels.h"' 0

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
