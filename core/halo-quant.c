#include "halo-quant.h"

const char *const halo_precision_names[] = {
    [HALO_PREC_FP32] = "fp32", [HALO_PREC_BF16] = "bf16", [HALO_PREC_FP16] = "fp16",
    [HALO_PREC_INT8] = "int8", [HALO_PREC_INT4] = "int4", [HALO_PREC_INT2] = "int2", NULL};
