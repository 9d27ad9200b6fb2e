/* targets/targets.h - targets and the toolchain that turns generated files
 * into artifacts (public header of targets/).
 */
#ifndef TARGETS_TARGETS_H
#define TARGETS_TARGETS_H

#include "codegen/codegen.h"

typedef struct TgtTarget {
    const char *name;             /* "x86_64-linux-gnu" */
    const char *cc;               /* C compiler command */
    const char *cflags;           /* optimization and ISA flags */
    const char *runtime_libdir;   /* where libtcrt.a and libtcrt_fast.a are */
    const char *runtime_include;  /* runtime/include */
} TgtTarget;

/* The host target, with runtime paths baked in at build time (overridable
 * by the TFCC_RUNTIME_DIR environment variable, read by the driver only). */
const TgtTarget *tgt_host(void);

typedef struct TgtTimes {
    double cc_seconds;            /* time spent in the C compiler and linker */
} TgtTimes;

/* Compiles dir/NAME.c, NAME_weights.S, NAME_main.c and links them with the
 * runtime into exe_path.  Errors carry the compiler's output. */
bool tgt_build_exe(const TgtTarget *t, const char *dir, const char *name, const char *exe_path,
                   TgtTimes *times, Status *st);

#endif
