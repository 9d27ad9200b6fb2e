/* compiler/frontend/config.c - tfcompile configs (tensorflow.tf2xla.Config).
 *
 * `--config x.config.pbtxt` names the feeds and fetches as tfcompile does.
 * The file is sniffed like a model: printable text is parsed with the
 * generic text-format parser, anything else is unpacked as binary protobuf.
 * Messages start with the file path.
 */
#include <stdlib.h>

#include "compiler/frontend/fe_int.h"

Tensorflow__Tf2xla__Config *fe_config_load(const char *path, Status *st)
{
    size_t n;
    uint8_t *buf = fe_read_file(path, FE_MAX_FILE_BYTES, &n, st);
    if (!buf)
        return NULL;
    ProtobufCMessage *m;
    if (fe_looks_like_text(buf, n))
        m = fe_pbtxt_parse(&tensorflow__tf2xla__config__descriptor, (const char *)buf, n, path, st);
    else
        m = fe_pb_unpack(&tensorflow__tf2xla__config__descriptor, buf, n, path, "tf2xla Config", st);
    free(buf);
    return (Tensorflow__Tf2xla__Config *)m;
}
