/* ir/ops.c - the op table: ops.def expanded into OpInfo rows.
 *
 * Each row keeps the columns the IR needs: name, arity, outputs, kind, the
 * shape rule (ir_shape_* in shape.c), the reference kernel pointer with its
 * name (stringified), the elementwise C expression (stringified), flags.
 * A column written as 0 stringifies to "0", which becomes NULL.
 * Invariants: table index == Op enum value; names are unique.
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <string.h>

#define ZERO_TO_NULL(str) (sizeof(str) == 2 ? NULL : (str))

static const OpInfo op_table[OP_COUNT] = {
#define X(e, name, arity, nout, kind, shape, ref, expr, flags)                                    \
    [OP_##e] = {name, arity, nout, kind, ir_##shape, ref, ZERO_TO_NULL(#ref), ZERO_TO_NULL(#expr), flags},
#include "ir/ops.def"
#undef X
};

const OpInfo *ir_op_info(Op op)
{
    if ((int)op < 0 || op >= OP_COUNT)
        return NULL;
    return &op_table[op];
}

const char *ir_op_name(Op op)
{
    const OpInfo *i = ir_op_info(op);
    return i ? i->name : "?";
}

bool ir_op_from_name(const char *name, Op *out)
{
    if (!name)
        return false;
    for (int i = 0; i < OP_COUNT; i++) {
        if (strcmp(op_table[i].name, name) == 0) {
            *out = (Op)i;
            return true;
        }
    }
    return false;
}

const char *ir_kind_name(OpKind k)
{
    switch (k) {
    case K_LEAF: return "leaf";
    case K_ELEM: return "elementwise";
    case K_REDUCE: return "reduce";
    case K_CONTRACT: return "contract";
    case K_WINDOW: return "window";
    case K_MOVE: return "move";
    case K_MISC: return "misc";
    }
    return "?";
}
