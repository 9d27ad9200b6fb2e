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
 * writes, and tcrt_ckpt_open reads TensorFlow's (uncompressed tables;
 * sliced or string tensors are reported, not read).
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

/* Writes a checkpoint of n entries (keys unique; sorted by the writer)
 * atomically: each file goes to a temporary name in the same folder, is
 * fsync'ed and renamed into place (data shard first, index last, then the
 * folder is fsync'ed), so a reader sees the old checkpoint or the new one,
 * never a mix, even if the process dies mid-way. */
tcrt_status tcrt_ckpt_write(const char *prefix, const tcrt_ckpt_entry *e, int n, char *err, size_t errlen);

/* A compiled model's state: every variable of m (tcrt_var) by name, read
 * from arena + offset.  tcrt_model_restore reads every variable of m from
 * the checkpoint (a variable missing, or of another dtype or shape, is an
 * error naming it; on error the arena's state may be partly written) and
 * ignores entries the model has no variable for. */
tcrt_status tcrt_model_save(const tcrt_model *m, const uint8_t *arena, const char *prefix, char *err,
                            size_t errlen);
tcrt_status tcrt_model_restore(const tcrt_model *m, uint8_t *arena, const char *prefix, char *err,
                               size_t errlen);

/* CRC32C (Castagnoli) and TensorFlow's masking of stored CRCs. */
uint32_t tcrt_crc32c(uint32_t crc, const void *data, size_t n);
static inline uint32_t tcrt_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#ifdef __cplusplus
}
#endif
#endif
