# common.sh - sourced by the MPI test scripts (test_mpi.sh, test_ps.sh) after they set
# $tfcc and $work: fail, the MPI checks (SKIP 77 without mpirun/mpicc), compile_mpi, the
# mpirun command line, and $npyw (tools/npyw.py's folder, for the scripts' Python).
npyw=$(cd "$(dirname "$0")/../../tools" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
# require_mpi: SKIP (exit 77) when mpirun or mpicc is missing
require_mpi() {
    command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 77; }
    command -v mpicc >/dev/null 2>&1 || { echo "SKIP: mpicc not found"; exit 77; }
}
# compile_mpi OUT ARGS...: a compile that links MPI; SKIP when this tfcc was built without it
compile_mpi() {
    out=$1
    shift
    "$tfcc" compile "$@" -o "$out" >/dev/null 2>"$work/cerr" && return 0
    grep -q "this tfcc was built without MPI" "$work/cerr" && { cat "$work/cerr"; echo "SKIP: no MPI build"; exit 77; }
    fail "compile $*: $(cat "$work/cerr")"
}
# Open MPI's own allocations outlive MPI_Finalize: under `make test-asan` (the executables
# link the sanitized runtime) LeakSanitizer would report them, so leak checking is off for
# the MPI processes (AddressSanitizer and UBSan still run).  Loopback only
# (../shared/TOOLCHAIN.md).
mpirun="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader,tcp --mca btl_tcp_if_include lo \
--mca oob_tcp_if_include lo"
