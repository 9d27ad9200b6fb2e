/* compiler/frontend/pbmsg.c - building protobuf-c messages by reflection.
 *
 * The text-format and JSON readers know no message type: they walk
 * ProtobufCMessageDescriptors and store values through the field
 * descriptors' offsets.  A value goes in two steps: fe_pb_slot() finds (or
 * makes) the storage for one value of a field, then a typed setter writes it
 * with range checks.
 *
 * Layout facts used (protobuf-c 1.4):
 *   - repeated: size_t count at quantifier_offset, T* array at offset;
 *   - oneof member (FLAG_ONEOF): uint32 case at quantifier_offset, the
 *     members share storage at offset;
 *   - proto2 optional scalars: protobuf_c_boolean has_ at quantifier_offset;
 *   - proto3 singular: just the member.
 * Invariants: arrays we grow have capacity = the smallest power of two >= n
 * (so no capacity field is needed); every pointer stored is malloc'd, so
 * protobuf_c_message_free_unpacked(m, NULL) frees what we built.  Strings
 * that still equal the descriptor default (protobuf_c_empty_string) are
 * never freed.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/fe_int.h"

#define MEMBER(m, off, T) (*(T *)((char *)(m) + (off)))

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    }
    return 8;
}

bool fe_pb_is_integer_type(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return true;
    default:
        return false;
    }
}

bool fe_pb_is_float_type(ProtobufCType t)
{
    return t == PROTOBUF_C_TYPE_FLOAT || t == PROTOBUF_C_TYPE_DOUBLE;
}

/* proto name "tensor_shape" vs JSON name "tensorShape". */
static bool json_name_eq(const char *proto, const char *key, size_t len)
{
    size_t k = 0;
    bool upper = false;
    for (const char *p = proto; *p; p++) {
        if (*p == '_') {
            upper = true;
            continue;
        }
        char c = *p;
        if (upper && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        upper = false;
        if (k >= len || key[k] != c)
            return false;
        k++;
    }
    return k == len;
}

const ProtobufCFieldDescriptor *fe_pb_field(const ProtobufCMessageDescriptor *d, const char *name, size_t len,
                                            bool allow_json)
{
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (strlen(f->name) == len && memcmp(f->name, name, len) == 0)
            return f;
    }
    if (allow_json)
        for (unsigned i = 0; i < d->n_fields; i++)
            if (json_name_eq(d->fields[i].name, name, len))
                return &d->fields[i];
    return NULL;
}

bool fe_pb_is_map(const ProtobufCFieldDescriptor *f)
{
    if (f->label != PROTOBUF_C_LABEL_REPEATED || f->type != PROTOBUF_C_TYPE_MESSAGE)
        return false;
    const ProtobufCMessageDescriptor *d = f->descriptor;
    size_t sl = strlen(d->short_name);
    return d->n_fields == 2 && sl > 5 && strcmp(d->short_name + sl - 5, "Entry") == 0 &&
           strcmp(d->fields[0].name, "key") == 0 && d->fields[0].id == 1 &&
           strcmp(d->fields[1].name, "value") == 0 && d->fields[1].id == 2;
}

ProtobufCMessage *fe_pb_new(const ProtobufCMessageDescriptor *d)
{
    ProtobufCMessage *m = malloc(d->sizeof_message);
    if (m)
        d->message_init(m);
    return m;
}

static bool is_default_string(const ProtobufCFieldDescriptor *f, const char *s)
{
    /* proto3 string defaults point at protobuf_c_empty_string, whose
     * address may differ per translation unit: compare with the descriptor's */
    return s == protobuf_c_empty_string || (f->default_value && s == (const char *)f->default_value);
}

/* Frees the value stored at slot for field f (one element) and zeroes it. */
static void free_value(void *slot, const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        char *s = *(char **)slot;
        if (s && !is_default_string(f, s))
            free(s);
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        ProtobufCBinaryData *b = slot;
        const ProtobufCBinaryData *def = f->default_value;
        if (b->data && !(def && b->data == def->data))
            free(b->data);
        break;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        ProtobufCMessage *sub = *(ProtobufCMessage **)slot;
        if (sub && sub != f->default_value)
            protobuf_c_message_free_unpacked(sub, NULL);
        break;
    }
    default:
        break;
    }
    memset(slot, 0, elem_size(f->type));
}

void *fe_pb_slot(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t *n = &MEMBER(m, f->quantifier_offset, size_t);
        char **arr = &MEMBER(m, f->offset, char *);
        size_t es = elem_size(f->type);
        /* capacity is the smallest power of two >= n: grow when n is one */
        if (*n == 0 || (*n & (*n - 1)) == 0) {
            size_t cap = *n == 0 ? 1 : *n * 2;
            if (cap > SIZE_MAX / es)
                return NULL;
            char *na = realloc(*n == 0 ? NULL : *arr, cap * es);
            if (!na)
                return NULL;
            *arr = na;
        }
        char *slot = *arr + *n * es;
        memset(slot, 0, es);
        (*n)++;
        return slot;
    }
    void *slot = (char *)m + f->offset;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        uint32_t *cs = &MEMBER(m, f->quantifier_offset, uint32_t);
        if (*cs != f->id) {
            if (*cs != 0) {
                const ProtobufCFieldDescriptor *old =
                    protobuf_c_message_descriptor_get_field(m->descriptor, *cs);
                if (old)
                    free_value(slot, old);
            }
            memset(slot, 0, elem_size(f->type));
            *cs = f->id;
        }
        return slot;
    }
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
        f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
        MEMBER(m, f->quantifier_offset, protobuf_c_boolean) = 1;
    return slot;
}

const char *fe_pb_set_string(void *slot, const ProtobufCFieldDescriptor *f, const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (!c)
        return "out of memory";
    memcpy(c, s, n);
    c[n] = 0;
    char **p = slot;
    if (*p && !is_default_string(f, *p))
        free(*p);
    *p = c;
    return NULL;
}

const char *fe_pb_set_bytes(void *slot, const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c)
        return "out of memory";
    if (n)
        memcpy(c, p, n);
    free_value(slot, f);
    ProtobufCBinaryData *b = slot;
    b->data = c;
    b->len = n;
    return NULL;
}

const char *fe_pb_set_int(void *slot, const ProtobufCFieldDescriptor *f, bool neg, uint64_t mag)
{
    if (mag == 0)
        neg = false;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_ENUM:
        if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > INT32_MAX)
            return "integer out of range for int32";
        *(int32_t *)slot = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
        return NULL;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (neg || mag > UINT32_MAX)
            return "integer out of range for uint32";
        *(uint32_t *)slot = (uint32_t)mag;
        return NULL;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > INT64_MAX)
            return "integer out of range for int64";
        *(int64_t *)slot = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
        return NULL;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (neg)
            return "integer out of range for uint64";
        *(uint64_t *)slot = mag;
        return NULL;
    case PROTOBUF_C_TYPE_BOOL:
        if (neg || mag > 1)
            return "expected 0 or 1 for bool";
        *(protobuf_c_boolean *)slot = (protobuf_c_boolean)mag;
        return NULL;
    case PROTOBUF_C_TYPE_FLOAT:
        *(float *)slot = neg ? -(float)mag : (float)mag;
        return NULL;
    case PROTOBUF_C_TYPE_DOUBLE:
        *(double *)slot = neg ? -(double)mag : (double)mag;
        return NULL;
    default:
        return "integer given for a non-numeric field";
    }
}

const char *fe_pb_set_double(void *slot, const ProtobufCFieldDescriptor *f, double v)
{
    if (f->type == PROTOBUF_C_TYPE_FLOAT)
        *(float *)slot = (float)v;
    else if (f->type == PROTOBUF_C_TYPE_DOUBLE)
        *(double *)slot = v;
    else
        return "floating-point value given for a non-float field";
    return NULL;
}

const char *fe_pb_set_bool(void *slot, const ProtobufCFieldDescriptor *f, bool v)
{
    if (f->type != PROTOBUF_C_TYPE_BOOL)
        return "boolean given for a non-bool field";
    *(protobuf_c_boolean *)slot = v;
    return NULL;
}

ProtobufCMessage *fe_pb_slot_message(void *slot, const ProtobufCFieldDescriptor *f)
{
    ProtobufCMessage **p = slot;
    if (*p && *p != f->default_value)
        return *p;
    *p = fe_pb_new(f->descriptor);
    return *p;
}

bool fe_parse_uint(const char *s, size_t n, bool allow_octal, uint64_t *mag)
{
    unsigned base = 10;
    size_t i = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    } else if (allow_octal && n >= 2 && s[0] == '0') {
        base = 8;
        i = 1;
    }
    if (i >= n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    *mag = v;
    return true;
}
