/* Model descriptions (src/halo-model.h) and the bytes predicted from them
 * (partition/halo-predict.h), checked against hand-worked models. */
#include <criterion/criterion.h>

#include "halo-model.h"
#include "halo-predict.h"

static halo_model_comm describe(const int32_t *dims, int ndims, int input_dropout,
                                halo_model_desc *d) {
  cr_assert_eq(halo_model_describe(HALO_MODEL_GCN, dims, ndims, input_dropout, d), HALO_OK);
  return halo_model_comm_of(d);
}

Test(predict, cora_gcn_with_input_dropout) {
  /* 1433 -> 16 -> 7: layer 0 multiplies by W first and exchanges 16 columns
   * forward and 16 backward (for dW = Xᵀ·Aᵀ·dZ); layer 1 exchanges 7 and 7. */
  int32_t dims[] = {1433, 16, 7};
  halo_model_desc d;
  halo_model_comm m = describe(dims, 3, 1, &d);
  cr_expect_eq(d.shape[0], HALO_LAYER_TRANSFORM);
  cr_expect_eq(d.comm[0].fwd, 16);
  cr_expect_eq(d.comm[0].bwd, 16);
  cr_expect_eq(d.comm[1].fwd, 7);
  cr_expect_eq(d.comm[1].bwd, 7);
  cr_expect_eq(d.comm[0].setup + d.comm[1].setup, 0);
  cr_expect_eq(d.params, 1433 * 16 + 16 + 16 * 7 + 7);
  cr_expect_eq(halo_predict_epoch_columns(&m), 46);
  cr_expect_eq(halo_predict_epoch_bytes(100, &m), 100 * 46 * 4);
  cr_expect_eq(halo_predict_widest(&m), 16);
}

Test(predict, static_first_layer_without_input_dropout) {
  int32_t dims[] = {8, 32, 32, 4};
  halo_model_desc d;
  halo_model_comm m = describe(dims, 4, 0, &d);
  cr_expect_eq(d.shape[0], HALO_LAYER_CACHED);
  cr_expect_eq(d.comm[0].setup, 8);
  cr_expect_eq(d.comm[0].fwd + d.comm[0].bwd, 0);
  /* 32 -> 32 is not narrower on the output side: exchange H (32). */
  cr_expect_eq(d.comm[1].fwd, 32);
  cr_expect_eq(d.shape[1], HALO_LAYER_AGGREGATE);
  cr_expect_eq(d.comm[2].fwd, 4);
  cr_expect_eq(d.shape[2], HALO_LAYER_TRANSFORM);
  cr_expect_eq(halo_predict_epoch_columns(&m), 2 * 32 + 2 * 4);
  cr_expect_eq(halo_predict_setup_bytes(10, &m), 10 * 8 * 4);
  cr_expect_eq(halo_predict_widest(&m), 32);
}

Test(predict, wide_first_layer_with_dropout_has_no_backward_exchange) {
  /* 8 -> 64: H (X) is exchanged forward; dW = (A·X)ᵀ·dZ needs nothing more. */
  int32_t dims[] = {8, 64, 3};
  halo_model_desc d;
  halo_model_comm m = describe(dims, 3, 1, &d);
  cr_expect_eq(d.comm[0].fwd, 8);
  cr_expect_eq(d.comm[0].bwd, 0);
  cr_expect_eq(halo_predict_epoch_columns(&m), 8 + 3 + 3);
}

Test(predict, cagnet_formula) {
  int32_t dims[] = {1433, 16, 7};
  cr_expect_eq(halo_predict_cagnet1d_bytes(2708, 4, dims, 3), 3LL * 2708 * (1449 + 23) * 4);
}

Test(predict, broadcast_formula) {
  int32_t dims[] = {1433, 16, 7};
  halo_model_desc d;
  halo_model_comm m = describe(dims, 3, 1, &d);
  cr_expect_eq(halo_predict_broadcast1d_bytes(2708, 4, &m), 3LL * 2708 * 46 * 4);
}

Test(predict, rejects_bad_widths) {
  int32_t dims[] = {16, 0, 7};
  halo_model_desc d;
  halo_log_set_quiet(1);
  cr_expect_eq(halo_model_describe(HALO_MODEL_GCN, dims, 3, 1, &d), HALO_ERR_ARG);
  cr_expect_eq(halo_model_describe(HALO_MODEL_GCN, dims, 1, 1, &d), HALO_ERR_ARG);
}

Test(predict, model_names) {
  halo_model_kind k;
  cr_expect_eq(halo_model_parse("gcn", &k), HALO_OK);
  cr_expect_eq(k, HALO_MODEL_GCN);
  cr_expect_str_eq(halo_model_name(HALO_MODEL_GCN), "gcn");
  cr_expect_eq(halo_model_parse("sage", &k), HALO_ERR_ARG);
}
