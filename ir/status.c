/* ir/status.c - sticky error records (Status).
 *
 * st_errorf formats a message and appends it to st->msg, one message per
 * line; the first error's code wins and later ones only add text.  The
 * buffer never overflows: a message that does not fit is cut and ends in
 * "...".  st_prefix rewrites the buffer with `prefix: ` before every line.
 * Invariants: st->msg is always NUL-terminated; a NULL st is ignored.
 */
#include "ir/ir.h"

#include <string.h>

bool st_verrorf(Status *st, int code, const char *fmt, va_list ap)
{
    if (!st)
        return false;
    if (st->code == ST_OK)
        st->code = code == ST_OK ? ST_ERROR : code;
    st->n_errors++;
    size_t cap = sizeof st->msg;
    size_t len = strnlen(st->msg, cap - 1);
    if (len > 0 && len + 1 < cap)
        st->msg[len++] = '\n';
    st->msg[len] = 0;
    if (len + 1 >= cap)
        return false;
    int w = vsnprintf(st->msg + len, cap - len, fmt, ap);
    if (w < 0) {
        st->msg[len] = 0;
    } else if ((size_t)w >= cap - len) {
        /* truncated: mark it */
        if (cap - len > 4)
            memcpy(st->msg + cap - 4, "...", 4);
    }
    return false;
}

bool st_errorf(Status *st, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st_verrorf(st, code, fmt, ap);
    va_end(ap);
    return false;
}

void st_prefix(Status *st, const char *prefix)
{
    if (!st || !prefix || !st->msg[0])
        return;
    size_t plen = strlen(prefix);
    const char *sep = ": ";
    if (plen > 0 && prefix[plen - 1] == ' ')
        sep = "";
    else if (plen > 0 && prefix[plen - 1] == ':')
        sep = " ";
    char old[sizeof st->msg];
    memcpy(old, st->msg, sizeof old);
    size_t cap = sizeof st->msg, out = 0;
    const char *line = old;
    st->msg[0] = 0;
    while (*line && out + 1 < cap) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        int w = snprintf(st->msg + out, cap - out, "%s%s%.*s%s", prefix, sep, (int)ll, line,
                         nl ? "\n" : "");
        if (w < 0 || (size_t)w >= cap - out) {
            if (cap - out > 4)
                memcpy(st->msg + cap - 4, "...", 4);
            break;
        }
        out += (size_t)w;
        line = nl ? nl + 1 : line + ll;
    }
}
