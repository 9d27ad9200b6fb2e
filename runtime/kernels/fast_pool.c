/* runtime/kernels/fast_pool.c - fast NHWC pooling and depthwise kernels
 * (placeholder: filled in by the kernel work). */
#include "tcrt_kernels.h"
