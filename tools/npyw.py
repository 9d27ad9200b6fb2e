"""npyw.py - write float32 .npy files with the standard library only (no NumPy).

Used by the MPI tests (tests/mpi/*.sh) and benchmarks/distributed.sh to write
their batches: npy(path, shape, values) writes a C-order float32 array in
format version 1.0, the header padded so the data starts at a multiple of 64.
"""
import struct


def npy(path, shape, vals):
    """Writes the float32 values vals (a flat list, C order) as an array of shape."""
    n = 1
    for d in shape:
        n *= d
    if n != len(vals):
        raise ValueError("%s: shape %s holds %d values, got %d" % (path, shape, n, len(vals)))
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape)
    h += " " * (63 - (10 + len(h)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
        f.write(struct.pack("<%df" % len(vals), *vals))


def lcg(seed):
    """A deterministic pseudo-random source (the C library's classic LCG):
    returns a function giving the next value in [0, 2)."""
    state = [seed]

    def nxt():
        state[0] = (state[0] * 1103515245 + 12345) % 2**31
        return state[0] / 2**30

    return nxt
