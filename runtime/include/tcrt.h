/* tcrt.h - the tfcc runtime: what every compiled artifact links.
 *
 * Dtypes (numbered as TensorFlow's DataType enum, so the frontends can pass
 * them through unchanged), tensors as (data, dtype, shape), status codes,
 * the model descriptor a generated artifact exports, .npy I/O and the
 * standalone main().  Nothing here depends on the compiler.
 */
#ifndef TCRT_H
#define TCRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TCRT_MAX_RANK 8

typedef enum tcrt_dtype {
    TCRT_INVALID = 0,
    TCRT_F32 = 1,   /* DT_FLOAT */
    TCRT_F64 = 2,   /* DT_DOUBLE */
    TCRT_I32 = 3,   /* DT_INT32 */
    TCRT_U8 = 4,    /* DT_UINT8 */
    TCRT_I16 = 5,   /* DT_INT16 */
    TCRT_I8 = 6,    /* DT_INT8 */
    TCRT_STRING = 7,/* DT_STRING: never reaches generated code */
    TCRT_I64 = 9,   /* DT_INT64 */
    TCRT_BOOL = 10, /* DT_BOOL, stored as one byte 0/1 */
    TCRT_BF16 = 14, /* DT_BFLOAT16: storage only, like TCRT_F16 (.npy descr '|V2') */
    TCRT_U16 = 17,  /* DT_UINT16 */
    TCRT_F16 = 19,  /* DT_HALF: storage only (the IR moves and reinterprets it; frontends convert) */
    TCRT_U32 = 22,  /* DT_UINT32 */
    TCRT_U64 = 23,  /* DT_UINT64 */
} tcrt_dtype;

typedef enum tcrt_status {
    TCRT_OK = 0,
    TCRT_ERR_ARG = 1,     /* bad argument (name, index, flag) */
    TCRT_ERR_DTYPE = 2,   /* a feed has the wrong dtype */
    TCRT_ERR_SHAPE = 3,   /* a feed has the wrong shape */
    TCRT_ERR_IO = 4,      /* file could not be read or written */
    TCRT_ERR_FORMAT = 5,  /* malformed .npy header or data */
    TCRT_ERR_NOMEM = 6,   /* allocation failed (outside run) */
    TCRT_ERR_RUNTIME = 7, /* a kernel met a value it cannot handle */
} tcrt_status;

typedef struct tcrt_tensor {
    void *data;                    /* not owned */
    tcrt_dtype dtype;
    int rank;
    int64_t dims[TCRT_MAX_RANK];
} tcrt_tensor;

/* One feed or fetch of a compiled model. */
typedef struct tcrt_io {
    const char *name;              /* tensor name as given: "input:0" */
    tcrt_dtype dtype;
    int rank;
    int64_t dims[TCRT_MAX_RANK];
    size_t bytes;                  /* element count * element size */
    size_t offset;                 /* byte offset in the arena */
} tcrt_io;

/* One top-level kernel call of a model's run, in schedule order (--profile
 * of the standalone executable; docs/profiling.md).  Strings from the
 * model file, escaped for C; "?" where unknown. */
typedef struct tcrt_kernel_info {
    const char *kernel; /* generated function: "k020_conv2d" */
    const char *node;   /* TF node it comes from: "Conv2D_1" */
    const char *op;     /* that node's TF op: "Conv2D" */
    const char *type;   /* its first output: "f32[1,112,112,24]" */
    double flops;       /* floating-point operations of one call (2 per multiply-add); 0: not counted */
} tcrt_kernel_info;

/* What a generated artifact exports (NAME_model). */
typedef struct tcrt_model {
    const char *name;
    int n_args;
    const tcrt_io *args;
    int n_results;
    const tcrt_io *results;
    size_t arena_bytes;            /* planned scratch, args and results included */
    size_t weights_bytes;          /* read-only constants linked in */
    tcrt_status (*run)(uint8_t *arena); /* arena: arena_bytes, 64-byte aligned */
    /* State (training graphs; docs/training.md).  0 / NULL for a model
     * without variables. */
    int n_vars;
    const struct tcrt_var *vars;
    const unsigned char *weights;  /* the linked weights (initial values) */
    /* The top-level kernel calls, whose times a run adds to tcrt_prof_ns[i]
     * while it is set (both backends).  0 / NULL where the run has no timing
     * hooks (--cluster) or no kernel. */
    int n_kernels;
    const tcrt_kernel_info *kernels;
} tcrt_model;

/* Per-kernel timing: while non-NULL (it points at n_kernels counters), a
 * run adds each top-level kernel's wall time on the calling thread, in ns,
 * to tcrt_prof_ns[i].  NULL (the default) costs one load and branch per
 * kernel.  Process-wide: set it only between runs, with one model running. */
extern uint64_t *tcrt_prof_ns;
uint64_t tcrt_clock_ns(void); /* CLOCK_MONOTONIC, ns */
/* The same hooks as calls (the LLVM backend): begin returns the start time
 * (0 while tcrt_prof_ns is NULL), end adds the time since it to counter i. */
uint64_t tcrt_prof_begin(void);
void tcrt_prof_end(int i, uint64_t t0);

/* A variable: its value lives in the arena at `offset`, kept across runs.
 * Its initial value is `bytes` bytes at weights + init_offset.  A run
 * computes the next value into arena + new_offset (-1: never assigned);
 * tcrt_vars_commit copies it into the state after the run. */
typedef struct tcrt_var {
    const char *name;              /* checkpoint key: "dense/kernel" */
    tcrt_dtype dtype;
    int rank;
    int64_t dims[TCRT_MAX_RANK];
    size_t bytes;
    size_t offset;                 /* state, in the arena */
    size_t init_offset;            /* initial value, in the weights */
    int64_t new_offset;            /* the run's assigned value in the arena, or -1 */
    int trainable;
} tcrt_var;

/* ---- dtypes ---- */
size_t tcrt_dtype_size(tcrt_dtype dt);          /* 0 for unknown / string */
const char *tcrt_dtype_name(tcrt_dtype dt);     /* "float32", "int32", ... */
int64_t tcrt_tensor_count(const tcrt_tensor *t);
/* "float32[1,224,224,3]" ("int32[]" for a scalar) into buf (n bytes, always
 * NUL-terminated; rank is clamped to 0..TCRT_MAX_RANK). */
void tcrt_type_str(tcrt_dtype dt, int rank, const int64_t *dims, char *buf, size_t n);

/* ---- status ---- */
const char *tcrt_status_str(tcrt_status s);

/* ---- threads ----
 * tcrt_set_threads clamps to [1, TCRT_MAX_THREADS] and starts the runtime's
 * thread pool (tcrt_pool.h) right away (not inside the first run);
 * tcrt_get_threads is the count in use (lower if a thread could not be
 * created).  Fast-kernel workspaces are sized for any count up to
 * TCRT_MAX_THREADS.  The workers start with the affinity of the thread that
 * calls tcrt_set_threads; on Linux a worker that finds itself on the CPU
 * the model runs from moves to the others of that set (when it has a CPU
 * per thread), so two threads never share one CPU while another idles.
 * The caller's own thread is never pinned (runtime/pool.c, "Stacking"). */
#define TCRT_MAX_THREADS 16
void tcrt_set_threads(int n);                   /* kernels that can use threads */
int tcrt_get_threads(void);

/* ---- floating-point mode ----
 * The runtime's worker threads take the floating-point control of the
 * thread that runs the model (MXCSR's rounding and FTZ/DAZ bits on x86,
 * FPCR on AArch64) for every parallel kernel, so whatever mode the caller
 * runs in holds on all threads.  tcrt_flush_denormals(1) sets the calling
 * thread to flush subnormal results and inputs to zero (x86 FTZ and DAZ,
 * AArch64 FZ), what TensorFlow's CPU executor does; 0 clears it.  Returns
 * 0, or -1 where the CPU has no such mode (nothing changed).  The
 * executables' --flush-denormals calls it; IEEE subnormals are the default. */
int tcrt_flush_denormals(int on);

/* ---- huge pages ----
 * tcrt_huge_pages(p, bytes) moves the whole 2 MB-aligned 2 MB pieces inside
 * [p, p + bytes) of a read-only mapping (a model's linked weights,
 * tcrt_model.weights) onto transparent huge pages in place: same bytes at
 * the same addresses, read-only, at most 2 MB more resident at any moment
 * while it runs.  A model streams its weights every run; in 4 KB pages each
 * costs a TLB miss (runtime/hugepage.c, docs/performance.md).  Returns the
 * bytes moved: 0 off Linux, where transparent huge pages are "never", or
 * when the range holds no whole aligned piece.  The moved pieces are
 * private anonymous memory, no longer shared with other processes running
 * the same file.  It copies the pieces (ResNet-50's 112 MB: about 20 ms),
 * which pays off for a process that runs the model many times; the
 * executables call it on their weights before the first run when given
 * --huge-pages. */
size_t tcrt_huge_pages(const void *p, size_t bytes);

/* ---- signatures and feeds (tcrt.c) ----
 * Every function here takes err/errlen (err may be NULL) for a one-line
 * reason and never exits, aborts or reads outside the buffers it is given.
 *
 * tcrt_check_model: a descriptor is usable: counts >= 0, pointers present,
 * every arg and result named, of a known dtype, rank 0..8, dims >= 0,
 * bytes == element count x element size, inside the arena.  TCRT_ERR_ARG
 * ("invalid model descriptor: ...") otherwise. */
tcrt_status tcrt_check_model(const tcrt_model *m, char *err, size_t errlen);
/* Variables: tcrt_vars_init copies every initial value into its state;
 * tcrt_vars_commit copies each assigned value into its state (call after
 * every successful run; generated NAME_run does).  No allocation. */
void tcrt_vars_init(const tcrt_model *m, uint8_t *arena);
void tcrt_vars_commit(const tcrt_model *m, uint8_t *arena);
/* Index of the variable named name, -1 if none. */
int tcrt_find_var(const tcrt_model *m, const char *name);
/* Index of the arg named name ("x" and "x:0" are the same), -1 if none. */
int tcrt_find_arg(const tcrt_model *m, const char *name);
/* t's dtype, shape and byte size against io (t->data is not looked at):
 * TCRT_ERR_DTYPE, TCRT_ERR_SHAPE or TCRT_ERR_ARG (byte size) with
 *   feed 'x:0': wrong dtype: expected float32[2,3], got int32[2,3]
 *   feed 'x:0': wrong shape: expected float32[2,3], got float32[3,2]       */
tcrt_status tcrt_check_feed(const tcrt_io *io, const tcrt_tensor *t, char *err, size_t errlen);
/* Checks t against arg i of m (tcrt_check_feed, and t->data present when the
 * arg has bytes), then copies t->data into arena + args[i].offset.  On any
 * error nothing is written.  TCRT_ERR_ARG also for a bad m, arena or i. */
tcrt_status tcrt_set_feed(const tcrt_model *m, uint8_t *arena, int i, const tcrt_tensor *t, char *err,
                          size_t errlen);

/* ---- .npy I/O (npy.c) ----
 * tcrt_npy_read: reads a NumPy v1/v2/v3 file (little-endian, C order) into a
 * malloc'ed buffer (*data, free with free()). On error returns non-OK and
 * writes a one-line reason naming the file into err (errlen bytes).
 * Rejected (TCRT_ERR_FORMAT): bad magic, versions other than 1.0/2.0/3.0,
 * a header length past the end of the file or above TCRT_NPY_MAX_HEADER,
 * a header that is not a dict of 'descr', 'fortran_order' and 'shape' (or
 * has text after it), fortran_order True, big-endian or unknown descr,
 * negative or overflowing dims, rank > 8, data shorter or longer than the
 * shape says.  Only regular files are opened (a FIFO or device: TCRT_ERR_IO,
 * without blocking). */
#define TCRT_NPY_MAX_HEADER 65536
tcrt_status tcrt_npy_read(const char *path, tcrt_tensor *out, char *err, size_t errlen);
/* Like tcrt_npy_read, but the header is checked against io (tcrt_check_feed's
 * rules) before any data is allocated or read: a file that does not match
 * fails with TCRT_ERR_DTYPE / TCRT_ERR_SHAPE ("PATH: wrong dtype: expected
 * float32[2,2], got int32[2,2]") whatever its size. */
tcrt_status tcrt_npy_read_feed(const char *path, const tcrt_io *io, tcrt_tensor *out, char *err,
                               size_t errlen);
/* Like tcrt_npy_read_feed, but the data (io->bytes, once the header matched
 * io) is read straight into dst, which nothing is allocated for: the
 * standalone executable reads large feeds into the arena this way before
 * each run instead of keeping a second copy.  On a read error dst may hold
 * part of the data. */
tcrt_status tcrt_npy_read_feed_into(const char *path, const tcrt_io *io, void *dst, char *err, size_t errlen);
/* Writes atomically: a new temporary file next to path (created exclusively,
 * so an existing file or symlink of that name is never followed), flushed
 * to disk, then renamed over path.  On failure the temporary is removed and
 * path is left as it was. */
tcrt_status tcrt_npy_write(const char *path, const tcrt_tensor *t, char *err, size_t errlen);

/* ---- standalone executable (main.c) ----
 * Flags: --feed NAME=FILE.npy (repeatable), --out-dir DIR, --repeat N,
 * --threads N, --help; training (docs/training.md): --steps N (run until
 * the global step is N; a feed whose first dim is k times the arg's holds
 * k batches, step i uses batch i mod k), --log-every K ("step=S NAME=X"
 * for each float scalar result), --save PREFIX and --save-every K (a
 * TensorBundle checkpoint of the variables plus "tfcc/global_step",
 * written atomically; tcrt_ckpt.h), --restore PREFIX (the variables and
 * the step before the first run).  Returns the process exit code: 0 ok,
 * 1 run / I/O / checkpoint error, 2 usage error. */
int tcrt_main(const tcrt_model *m, int argc, char **argv);

/* Output file name for a tensor name: every char outside [A-Za-z0-9._-]
 * becomes '_', then ".npy".  Writes at most n bytes (NUL included). */
void tcrt_output_filename(const char *tensor, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
