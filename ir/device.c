/* ir/device.c - TensorFlow device names: parse, canonicalize, merge, match.
 *
 * A device name is a sequence of optional fields, TensorFlow's
 * DeviceNameUtils::ParsedName:
 *   /job:J/replica:R/task:T/device:TYPE:ID
 * Each field may be missing (a partial spec, "/device:GPU:1", "/job:ps/task:1")
 * or "*" (a wildcard, same as missing).  Also accepted: the legacy forms
 * "/cpu:N", "/gpu:N" (any case), "/device:TYPE" without an id, the local
 * form "TYPE:N" without a slash ("GPU:0", "cpu:0"), "" and "/" (nothing
 * requested).  Device types "cpu" and "gpu" are upper-cased (TensorFlow's
 * Python DeviceSpec does the same); other types keep their spelling.
 * The canonical text prints the fields that are present, in order:
 * "/job:localhost/replica:0/task:0/device:CPU:0"; a type without an id
 * prints "*" as the id ("/device:GPU:*").
 * Merging (ir_dev_merge) is MergeDevNames without soft placement: a field
 * set on both sides must agree, else the merge fails naming both specs.
 * Completion (ir_dev_complete) fills missing fields from a full base name.
 * Invariants: names and numbers are bounded (IR_DEV_MAX_NAME bytes, ids up
 * to 1e9); parsing never reads past the string and never allocates.
 */
#include "ir/ir.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool consume(const char **s, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(*s, prefix, n) != 0)
        return false;
    *s += n;
    return true;
}

static bool consume_ci(const char **s, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncasecmp(*s, prefix, n) != 0)
        return false;
    *s += n;
    return true;
}

/* A name: a letter, then letters, digits or '_', up to a '/' (or ':' when
 * stop_colon).  False when malformed or too long. */
static bool consume_name(const char **s, char *out, bool stop_colon)
{
    const char *p = *s;
    if (!isalpha((unsigned char)*p))
        return false;
    size_t n = 0;
    while (*p && *p != '/' && !(stop_colon && *p == ':')) {
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
        if (n + 1 >= IR_DEV_MAX_NAME)
            return false;
        out[n++] = *p++;
    }
    out[n] = '\0';
    *s = p;
    return true;
}

static bool consume_number(const char **s, int *out)
{
    const char *p = *s;
    if (!isdigit((unsigned char)*p))
        return false;
    long v = 0;
    while (isdigit((unsigned char)*p)) {
        v = v * 10 + (*p - '0');
        if (v > 1000000000L)
            return false;
        p++;
    }
    *out = (int)v;
    *s = p;
    return true;
}

/* "cpu"/"gpu" in any case become "CPU"/"GPU". */
static void normalize_type(char *type)
{
    if (!strcasecmp(type, "cpu"))
        strcpy(type, "CPU");
    else if (!strcasecmp(type, "gpu"))
        strcpy(type, "GPU");
}

/* "TYPE:N" with nothing else (TensorFlow's ParseLocalName). */
static bool parse_local(const char *s, IrDevName *d)
{
    if (!consume_name(&s, d->type, true) || !consume(&s, ":") || !consume_number(&s, &d->id) || *s)
        return false;
    d->has_type = d->has_id = true;
    normalize_type(d->type);
    return true;
}

bool ir_dev_parse(const char *s, IrDevName *d)
{
    memset(d, 0, sizeof *d);
    if (!s)
        return true;
    if (s[0] != '/' && s[0]) {
        if (parse_local(s, d))
            return true;
        memset(d, 0, sizeof *d);
        return false;
    }
    if (!strcmp(s, "/"))
        return true;
    while (*s) {
        bool progress = false;
        if (consume(&s, "/job:")) {
            d->has_job = !consume(&s, "*");
            if (d->has_job && !consume_name(&s, d->job, false))
                return false;
            progress = true;
        }
        if (consume(&s, "/replica:")) {
            d->has_replica = !consume(&s, "*");
            if (d->has_replica && !consume_number(&s, &d->replica))
                return false;
            progress = true;
        }
        if (consume(&s, "/task:")) {
            d->has_task = !consume(&s, "*");
            if (d->has_task && !consume_number(&s, &d->task))
                return false;
            progress = true;
        }
        if (consume(&s, "/device:")) {
            d->has_type = !consume(&s, "*");
            if (d->has_type && !consume_name(&s, d->type, true))
                return false;
            if (d->has_type)
                normalize_type(d->type);
            if (consume(&s, ":")) {
                d->has_id = !consume(&s, "*");
                if (d->has_id && !consume_number(&s, &d->id))
                    return false;
            } else {
                d->has_id = false;
            }
            progress = true;
        }
        /* legacy "/cpu:N" and "/gpu:N" */
        for (int k = 0; k < 2; k++) {
            const char *legacy = k ? "/gpu:" : "/cpu:";
            if (consume_ci(&s, legacy)) {
                d->has_type = true;
                strcpy(d->type, k ? "GPU" : "CPU");
                d->has_id = !consume(&s, "*");
                if (d->has_id && !consume_number(&s, &d->id))
                    return false;
                progress = true;
            }
        }
        if (!progress)
            return false;
    }
    return true;
}

bool ir_dev_is_full(const IrDevName *d)
{
    return d->has_job && d->has_replica && d->has_task && d->has_type && d->has_id;
}

bool ir_dev_is_empty(const IrDevName *d)
{
    return !d->has_job && !d->has_replica && !d->has_task && !d->has_type && !d->has_id;
}

void ir_dev_complete(IrDevName *d, const IrDevName *base)
{
    if (!d->has_job && base->has_job) {
        d->has_job = true;
        memcpy(d->job, base->job, sizeof d->job);
    }
    if (!d->has_replica && base->has_replica) {
        d->has_replica = true;
        d->replica = base->replica;
    }
    if (!d->has_task && base->has_task) {
        d->has_task = true;
        d->task = base->task;
    }
    if (!d->has_type && base->has_type) {
        d->has_type = true;
        memcpy(d->type, base->type, sizeof d->type);
    }
    if (!d->has_id && base->has_id) {
        d->has_id = true;
        d->id = base->id;
    }
}

const char *ir_dev_str(const IrDevName *d, char *buf, size_t n)
{
    size_t len = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
#define APPEND(...)                                                                                \
    do {                                                                                           \
        int w_ = snprintf(buf + len, n - len, __VA_ARGS__);                                        \
        if (w_ < 0 || (size_t)w_ >= n - len)                                                       \
            return buf;                                                                            \
        len += (size_t)w_;                                                                         \
    } while (0)
    if (d->has_job)
        APPEND("/job:%s", d->job);
    if (d->has_replica)
        APPEND("/replica:%d", d->replica);
    if (d->has_task)
        APPEND("/task:%d", d->task);
    if (d->has_type) {
        if (d->has_id)
            APPEND("/device:%s:%d", d->type, d->id);
        else
            APPEND("/device:%s:*", d->type);
    }
#undef APPEND
    return buf;
}

bool ir_dev_merge(IrDevName *t, const IrDevName *o, char *why, size_t n)
{
    char a[IR_DEV_MAX_STR], b[IR_DEV_MAX_STR];
    const char *field = NULL;
    if (o->has_job && t->has_job && strcmp(t->job, o->job))
        field = "jobs";
    else if (o->has_replica && t->has_replica && t->replica != o->replica)
        field = "replicas";
    else if (o->has_task && t->has_task && t->task != o->task)
        field = "tasks";
    else if (o->has_type && t->has_type && strcmp(t->type, o->type))
        field = "types";
    else if (o->has_id && t->has_id && t->id != o->id)
        field = "ids";
    if (field) {
        if (why && n)
            snprintf(why, n, "incompatible %s: '%s' and '%s'", field, ir_dev_str(t, a, sizeof a),
                     ir_dev_str(o, b, sizeof b));
        return false;
    }
    ir_dev_complete(t, o);
    return true;
}

bool ir_dev_matches(const IrDevName *pattern, const IrDevName *name)
{
    if (pattern->has_job && (!name->has_job || strcmp(pattern->job, name->job)))
        return false;
    if (pattern->has_replica && (!name->has_replica || pattern->replica != name->replica))
        return false;
    if (pattern->has_task && (!name->has_task || pattern->task != name->task))
        return false;
    if (pattern->has_type && (!name->has_type || strcmp(pattern->type, name->type)))
        return false;
    if (pattern->has_id && (!name->has_id || pattern->id != name->id))
        return false;
    return true;
}

bool ir_dev_same_task(const IrDevName *a, const IrDevName *b)
{
    return a->has_job && b->has_job && !strcmp(a->job, b->job) && a->has_replica && b->has_replica &&
           a->replica == b->replica && a->has_task && b->has_task && a->task == b->task;
}

const IrDevName *ir_dev_local_task(void)
{
    static const IrDevName local = {true, true, true, false, false, "localhost", 0, 0, "", 0};
    return &local;
}

bool ir_dev_canonical(const char *s, char *buf, size_t n)
{
    IrDevName d;
    if (!ir_dev_parse(s, &d))
        return false;
    ir_dev_complete(&d, ir_dev_local_task());
    ir_dev_str(&d, buf, n);
    return true;
}
