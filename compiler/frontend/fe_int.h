/* compiler/frontend/fe_int.h - internals shared by the frontend's readers.
 *
 * Sections: pbmsg.c (building protobuf-c messages by reflection, used by the
 * text-format and JSON readers), json.c (a strict JSON parser and the
 * proto3 JSON -> protobuf-c converter), load.c (format sniffing).
 *
 * Memory: every message built here uses the system allocator exactly as
 * protobuf_c_message_unpack(..., NULL, ...) would, so
 * protobuf_c_message_free_unpacked(msg, NULL) frees it: submessages are
 * malloc'd and initialized with their descriptor's message_init, strings are
 * malloc'd and NUL-terminated, repeated fields are malloc'd arrays.
 */
#ifndef COMPILER_FRONTEND_FE_INT_H
#define COMPILER_FRONTEND_FE_INT_H

#include <protobuf-c/protobuf-c.h>

#include "compiler/frontend/frontend.h"

/* Nested messages / JSON containers deeper than this are rejected. */
#define FE_MAX_DEPTH 100

/* ---- pbmsg.c ----------------------------------------------------------- */

/* Field of d named name[0..len) (the proto name; with allow_json also the
 * lowerCamelCase JSON name).  NULL when there is none. */
const ProtobufCFieldDescriptor *fe_pb_field(const ProtobufCMessageDescriptor *d, const char *name, size_t len,
                                            bool allow_json);
/* True when f is a map<K,V> field (a repeated XxxEntry message {key=1; value=2}). */
bool fe_pb_is_map(const ProtobufCFieldDescriptor *f);
/* A new message of type d (malloc'd, initialized); NULL on OOM. */
ProtobufCMessage *fe_pb_new(const ProtobufCMessageDescriptor *d);
/* Storage for one more value of field f in m: for repeated fields a new
 * zeroed element at the end of the array, for oneof members the member
 * (the previous member of the oneof is freed and the case set), otherwise the
 * member itself.  NULL on OOM. */
void *fe_pb_slot(ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
/* Value setters on a slot from fe_pb_slot.  They return NULL on success or a
 * static description of the problem ("out of memory", "integer out of
 * range for int32", ...). */
const char *fe_pb_set_string(void *slot, const ProtobufCFieldDescriptor *f, const char *s, size_t n);
const char *fe_pb_set_bytes(void *slot, const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t n);
/* Integer value -1^neg * mag for any integer, enum or bool field. */
const char *fe_pb_set_int(void *slot, const ProtobufCFieldDescriptor *f, bool neg, uint64_t mag);
const char *fe_pb_set_double(void *slot, const ProtobufCFieldDescriptor *f, double v);
const char *fe_pb_set_bool(void *slot, const ProtobufCFieldDescriptor *f, bool v);
/* The submessage in a MESSAGE slot, allocated when the slot is empty (a
 * singular message field given twice is merged).  NULL on OOM. */
ProtobufCMessage *fe_pb_slot_message(void *slot, const ProtobufCFieldDescriptor *f);
bool fe_pb_is_integer_type(ProtobufCType t);
bool fe_pb_is_float_type(ProtobufCType t);
/* Parses an integer literal (decimal, 0x hex, leading-0 octal when
 * allow_octal) spanning exactly s[0..n) into sign + magnitude. */
bool fe_parse_uint(const char *s, size_t n, bool allow_octal, uint64_t *mag);

/* ---- json.c ------------------------------------------------------------ */

typedef enum JsonType { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } JsonType;

typedef struct JsonValue JsonValue;
typedef struct JsonMember {
    char *key; /* NUL-terminated (may contain NULs: key_len) */
    size_t key_len;
    JsonValue *value;
} JsonMember;

struct JsonValue {
    JsonType type;
    bool b;              /* JSON_BOOL */
    double num;          /* JSON_NUMBER (also num_text, the literal) */
    char *str;           /* JSON_STRING: decoded UTF-8, NUL-terminated; JSON_NUMBER: the literal */
    size_t len;          /* bytes in str */
    size_t n;            /* elements of items / members */
    JsonValue **items;   /* JSON_ARRAY */
    JsonMember *members; /* JSON_OBJECT, in file order */
    int line, col;       /* where the value starts */
};

/* Parses a whole JSON text; NULL + "NAME:LINE:COL: invalid JSON: ..." on error. */
JsonValue *fe_json_parse(const char *text, size_t n, const char *name, Status *st);
void fe_json_free(JsonValue *v);
/* Member `key` of an object (first match), NULL when absent or v is no object. */
const JsonValue *fe_json_get(const JsonValue *v, const char *key);
/* Fills m from the JSON object v following the proto3 JSON mapping.
 * `path` names v in messages (e.g. "modelTopology").  Unknown keys are
 * skipped. */
bool fe_json_to_pb(const JsonValue *v, ProtobufCMessage *m, const char *name, const char *path, Status *st);
/* Base64 (standard or URL alphabet, padding optional) -> malloc'd bytes. */
uint8_t *fe_base64_decode(const char *s, size_t n, size_t *out_n);

/* ---- load.c / tfjs.c --------------------------------------------------- */

/* True when buf is printable text (ASCII printable, whitespace, valid UTF-8). */
bool fe_looks_like_text(const uint8_t *buf, size_t n);
/* Binary protobuf -> message of type d with a nesting-depth pre-check; what
 * names the expected message in errors ("GraphDef", "tf2xla Config"). */
ProtobufCMessage *fe_pb_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t n,
                               const char *name, const char *what, Status *st);
/* TF.js model.json already in memory. */
Tensorflow__GraphDef *fe_tfjs_from_buffer(const char *json_path, const char *text, size_t n, Status *st);

#endif
