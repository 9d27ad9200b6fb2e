/* targets/targets.h - targets and the toolchain that turns generated files
 * into artifacts (public header of targets/).
 *
 * A target is one row of a table (targets.c): its name (--target), LLVM
 * triple, default CPU (--cpu), C/C++ compilers, archiver, flags and where its
 * runtime (libtcrt.a, libtcrt_fast.a) was built.  Artifacts (--emit):
 *   exe  NAME        standalone executable (feeds/fetches as .npy)
 *   lib  libNAME.a   generated code + weights + the runtime, one archive
 *   obj  NAME.o      generated code + weights, one relocatable object
 *   c    folder      portable sources: generated code, weights, the runtime's
 *                    portable sources and a Makefile
 * lib, obj and c also get NAME.h and the runtime's public tcrt.h.
 */
#ifndef TARGETS_TARGETS_H
#define TARGETS_TARGETS_H

#include "codegen/codegen.h"

typedef struct TgtTarget {
    const char *name;             /* "x86_64-linux-gnu" (--target) */
    const char *llvm_triple;      /* "x86_64-pc-linux-gnu" */
    const char *default_cpu;      /* NULL: the runtime's ISA flags (host); else e.g. "generic" */
    const char *cpu_flag;         /* how --cpu reaches cc: "-march=" (x86) or "-mcpu=" (Arm) */
    const char *cc;               /* C compiler command */
    const char *cxx;              /* C++ compiler command (the runtime's Eigen kernels, --emit c) */
    const char *ar;               /* archiver (GNU ar: rcsD and -M scripts) */
    const char *cflags;           /* optimization and ISA flags (host: the runtime's, plus -O2) */
    const char *runtime_libdir;   /* where libtcrt.a and libtcrt_fast.a are */
    const char *runtime_include;  /* runtime/include (the sources are in its parent) */
    const char *exe_wrapper;      /* how this machine runs its executables ("" natively) */
    const char *unavailable;      /* NULL, or why tfcc cannot build exe/lib/obj for it */
    const char *text_order;       /* NULL or "": none; else the prefix of the function orders
                                   * executables are linked with (lld --symbol-ordering-file;
                                   * runtime/text.order.ISA, tgt_text_order) */
    bool vector_math;             /* its executables compile the model with -fopenmp-simd
                                   * -DTFCC_VECTOR_MATH and link glibc's libmvec (tcrt_elem.h) */
} TgtTarget;

/* The host target, with runtime paths baked in at build time. */
const TgtTarget *tgt_host(void);
/* The target named name ("host" is the host), or NULL. */
const TgtTarget *tgt_find(const char *name);
/* The i-th target of the table, NULL past the end (for listings). */
const TgtTarget *tgt_at(int i);
/* The function order t's executables are linked with: t->text_order's file
 * for the kernels that the build host's CPU runs (tcrt_kern_isa:
 * "PREFIX.avx512", "PREFIX.avx2": the runs that made each entered that ISA's
 * kernels),
 * written into buf; NULL when t has none or the file is absent or does not
 * fit. */
const char *tgt_text_order(const TgtTarget *t, char *buf, size_t n);
/* The CPU name used for t: cpu when given, else t's default (host: from the
 * runtime's -march flag, "x86-64-v3" when it has none). */
const char *tgt_cpu(const TgtTarget *t, const char *cpu);
/* Whether exe/lib/obj can be built for t here: its compiler is on PATH and
 * its runtime libraries exist; otherwise an error saying what is missing. */
bool tgt_check(const TgtTarget *t, Status *st);

typedef struct TgtTimes {
    double cc_seconds;            /* time spent in the C compiler and linker */
} TgtTimes;

typedef enum TgtEmit { TGT_EXE, TGT_LIB, TGT_OBJ } TgtEmit;

/* One build: the generated files in dir (the tools' cwd), all named NAME. */
typedef struct TgtJob {
    const TgtTarget *t;
    const char *cpu;              /* NULL: the target's default */
    const char *dir;              /* NAME.c, NAME_weights.S/.bin, NAME_main.c */
    const char *name;             /* model prefix */
    const char *model_obj;        /* NULL, or an object file in dir that replaces NAME.c and
                                   * NAME_weights.S (the LLVM backend's) */
    bool mpi;                     /* TGT_EXE: link libtcrt_mpi and MPI (--cluster, docs/distributed.md) */
    bool static_link;             /* TGT_EXE: cc -static (not with mpi) */
} TgtJob;

/* Builds the artifact `kind` at out_path (relative to the caller's cwd or
 * absolute): the executable, libNAME.a or NAME.o.  Tool output goes to
 * dir/NAME_build.log; a failing tool becomes an error with its command line
 * and the last lines it printed. */
bool tgt_build(const TgtJob *j, TgtEmit kind, const char *out_path, TgtTimes *times, Status *st);

/* The host build of dir/NAME.* into exe_path (tgt_build with TGT_EXE). */
bool tgt_build_exe(const TgtTarget *t, const char *dir, const char *name, const char *exe_path,
                   TgtTimes *times, Status *st);

/* --emit c: copies NAME.c, NAME.h, NAME_main.c, NAME_weights.S/.bin from dir
 * and the runtime's portable sources (runtime/, no x86 micro-kernels) into
 * out_dir, with a Makefile building the executable NAME and libNAME.a with
 * $(CC)/$(CXX) (defaults: the target's compilers).  Needs no toolchain. */
bool tgt_write_c_project(const TgtJob *j, const char *out_dir, Status *st);

/* Copies dir/NAME.h and runtime/include/tcrt.h (which NAME.h includes)
 * into out_dir. */
bool tgt_copy_headers(const TgtJob *j, const char *out_dir, Status *st);

#endif
