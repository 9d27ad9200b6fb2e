#!/bin/bash
# check_lines.sh: print Check's closing lines from a meson test log, so CI sees what ran.
#
# usage: scripts/check_lines.sh BUILD/meson-logs/testlog.txt
#
# For each test in the log that ran a Check suite, prints `[test name]` and Check's own
# line (`100%: Checks: N, Failures: F, Errors: E`) unchanged; then one total line in the
# same format, summed over all suites (percent = passed / checks, rounded down as Check does).
set -u
log=${1:?usage: check_lines.sh TESTLOG}
[ -f "$log" ] || { echo "check_lines: no test log at $log" >&2; exit 0; }
echo "Check results ($log):"
awk '
  /^test:/ { name = $0; sub(/^test:[ \t]*/, "", name) }
  /[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
    match($0, /[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/)
    line = substr($0, RSTART, RLENGTH)
    print "[" name "]"; print line
    split(line, f, /[^0-9]+/)      # f[1]=pct f[2]=checks f[3]=failures f[4]=errors
    c += f[2]; fl += f[3]; e += f[4]; n++
  }
  END {
    if (n == 0) { print "(no Check suite in this log)"; exit }
    pct = c > 0 ? int(100 * (c - fl - e) / c) : 0
    print "[total of " n " Check suites]"
    printf "%d%%: Checks: %d, Failures: %d, Errors: %d\n", pct, c, fl, e
  }' "$log"
