/* codegen/cgl_none.c - the LLVM backend's entry points when tfcc is built
 * without LLVM (codegen.h): cgl_available() is false and cgl_emit_object
 * reports that the backend is not built in. */
#include "codegen/codegen.h"

bool cgl_available(void)
{
    return false;
}

bool cgl_emit_object(const IrGraph *g, const CgOptions *o, const CgLlvmTarget *t, const char *obj_path,
                     Status *st)
{
    (void)g, (void)o, (void)t, (void)obj_path;
    return st_errorf(st, ST_UNSUPPORTED,
                     "--backend llvm: this tfcc was built without LLVM (meson did not find LLVM 19)");
}
