/* tcrt_ckpt.h - TensorFlow checkpoints (the TensorBundle format) and a
 * compiled model's state saved and restored in it.
 *
 * A checkpoint PREFIX is two files: PREFIX.index, a LevelDB-style sorted
 * table (blocks of prefix-compressed keys with restart points, a block
 * trailer of a compression byte and a masked CRC32C, a 48-byte footer with
 * the metaindex and index block handles and the magic number) mapping ""
 * to a BundleHeaderProto and each tensor name to a BundleEntryProto (dtype,
 * shape, shard id, offset, size, masked CRC32C of the bytes); and
 * PREFIX.data-00000-of-00001 (one shard per header.num_shards) holding the
 * raw little-endian tensor bytes.  TensorFlow reads what tcrt_ckpt_write
 * writes (uncompressed tables), and tcrt_ckpt_open reads TensorFlow's
 * (uncompressed or Snappy-compressed tables; sliced or string tensors are
 * listed, and tcrt_ckpt_read refuses them).  Limits: the index file at most
 * 1 GiB, rank at most TCRT_MAX_RANK, num_shards at most 99999 (docs/checkpoints.md).
 *
 * Every function takes err/errlen (err may be NULL) for a one-line reason
 * naming the file and, where there is one, the tensor; none exits or
 * aborts.  Bad input (bad magic, a CRC mismatch, a truncated file, offsets
 * past the end, a varint that does not end, a dtype tfcc does not know) is
 * TCRT_ERR_FORMAT; a missing file TCRT_ERR_IO.
 */
#ifndef TCRT_CKPT_H
#define TCRT_CKPT_H

#include "tcrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tcrt_ckpt tcrt_ckpt;

/* One tensor of a checkpoint. */
typedef struct tcrt_ckpt_entry {
    const char *key;               /* "dense/kernel" */
    tcrt_dtype dtype;
    int rank;
    int64_t dims[TCRT_MAX_RANK];
    size_t bytes;
    const void *data;              /* tcrt_ckpt_write: the bytes; tcrt_ckpt_get: NULL */
} tcrt_ckpt_entry;

/* Reads and checks PREFIX.index (every block's CRC) and checks that the
 * data shards exist and are long enough for every entry.  *out is freed
 * with tcrt_ckpt_close. */
tcrt_status tcrt_ckpt_open(const char *prefix, tcrt_ckpt **out, char *err, size_t errlen);
void tcrt_ckpt_close(tcrt_ckpt *ck);
/* Entries in key order (the header entry "" is not one). */
int tcrt_ckpt_count(const tcrt_ckpt *ck);
const tcrt_ckpt_entry *tcrt_ckpt_get(const tcrt_ckpt *ck, int i);
/* The entry named key, or NULL. */
const tcrt_ckpt_entry *tcrt_ckpt_find(const tcrt_ckpt *ck, const char *key);
/* Copies the entry's bytes into dst (n must equal its byte size) and checks
 * their CRC32C. */
tcrt_status tcrt_ckpt_read(const tcrt_ckpt *ck, const tcrt_ckpt_entry *e, void *dst, size_t n, char *err,
                           size_t errlen);

/* Writes a checkpoint of n entries (keys unique and non-empty; sorted by
 * the writer; any dtype but string; data may be NULL when bytes is 0)
 * atomically: each file goes to an exclusive temporary name in the same
 * folder and is fsync'ed; only when both are complete are they renamed
 * into place (data shard first, index last), then the folder is fsync'ed.
 * Any failure removes the temporaries and leaves an existing checkpoint as
 * it was.  A crash between the two renames leaves old index and new data
 * (the reader then reports a size or CRC mismatch rather than returning
 * wrong values): tcrt_ckpt_write_step closes that window with a pointer.  The index is byte for byte what TensorFlow's
 * BundleWriter writes for the same tensors added in key order.  Bad
 * entries: TCRT_ERR_ARG. */
tcrt_status tcrt_ckpt_write(const char *prefix, const tcrt_ckpt_entry *e, int n, char *err, size_t errlen);

/* Checkpoint series (a trainer's --save): tcrt_ckpt_write_step writes the
 * checkpoint PREFIX-STEP (tcrt_ckpt_write), then atomically replaces the
 * pointer file PREFIX.latest (one line: the base name "NAME-STEP") and
 * removes the series' checkpoints older than the `keep` newest (keep >= 1).
 * The pointer is the commit point: a process killed at any moment leaves
 * PREFIX.latest naming a complete checkpoint (the new one or the one
 * before), never a mix of two.  tcrt_ckpt_resolve gives the checkpoint to
 * read for PREFIX: the one PREFIX.latest names when that file exists, else
 * PREFIX itself (a plain checkpoint, e.g. TensorFlow's); out gets at most
 * n bytes.  A pointer file that is not one line naming NAME-DIGITS is
 * TCRT_ERR_FORMAT. */
tcrt_status tcrt_ckpt_write_step(const char *prefix, int64_t step, const tcrt_ckpt_entry *e, int n, int keep,
                                 char *err, size_t errlen);
tcrt_status tcrt_ckpt_resolve(const char *prefix, char *out, size_t n, char *err, size_t errlen);

/* A compiled model's state: every variable of m (tcrt_var) by name, read
 * from arena + offset.  tcrt_model_restore reads every variable of m from
 * the checkpoint and ignores entries the model has no variable for.  Every
 * variable is looked up and compared before any is written; the first
 * problem is the error, naming the variable: missing (TCRT_ERR_FORMAT,
 * "PREFIX.index: no variable 'w' in the checkpoint"), another dtype
 * (TCRT_ERR_DTYPE) or shape (TCRT_ERR_SHAPE, "variable 'w': wrong shape:
 * the model has float32[3,2], the checkpoint float32[2,3]").  Only a read
 * error after that (a CRC mismatch, a shard changed since) can leave the
 * arena's state partly written. */
tcrt_status tcrt_model_save(const tcrt_model *m, const uint8_t *arena, const char *prefix, char *err,
                            size_t errlen);
tcrt_status tcrt_model_restore(const tcrt_model *m, uint8_t *arena, const char *prefix, char *err,
                               size_t errlen);

/* CRC32C (Castagnoli) and TensorFlow's masking of stored CRCs.
 * tcrt_crc32c extends crc (0 to start) with n bytes: the crc32 instruction
 * where the CPU has it (x86-64 SSE4.2), else tcrt_crc32c_portable
 * (slicing-by-8 tables; the same values, exposed so tests check both). */
uint32_t tcrt_crc32c(uint32_t crc, const void *data, size_t n);
uint32_t tcrt_crc32c_portable(uint32_t crc, const void *data, size_t n);
static inline uint32_t tcrt_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#ifdef __cplusplus
}
#endif
#endif
