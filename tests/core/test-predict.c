/* Exchange-width rules checked against hand-worked models. */
#include <criterion/criterion.h>

#include "halo-predict.h"

Test(predict, cora_gcn_with_input_dropout) {
  /* 1433 -> 16 -> 7: layer 0 multiplies by W first and exchanges 16 columns
   * forward and 16 backward (for dW = Xᵀ·Aᵀ·dZ); layer 1 exchanges 7 and 7. */
  int32_t dims[] = {1433, 16, 7};
  halo_widths w;
  cr_assert_eq(halo_predict_widths(dims, 3, 1, &w), HALO_OK);
  cr_expect_eq(w.fwd[0], 16);
  cr_expect_eq(w.bwd[0], 16);
  cr_expect_eq(w.fwd[1], 7);
  cr_expect_eq(w.bwd[1], 7);
  cr_expect_eq(w.setup, 0);
  cr_expect_eq(w.per_epoch, 46);
  cr_expect_eq(halo_predict_epoch_bytes(100, &w), 100 * 46 * 4);
}

Test(predict, static_first_layer_without_input_dropout) {
  int32_t dims[] = {8, 32, 32, 4};
  halo_widths w;
  cr_assert_eq(halo_predict_widths(dims, 4, 0, &w), HALO_OK);
  cr_expect_eq(w.setup, 8);
  cr_expect_eq(w.fwd[0] + w.bwd[0], 0);
  /* 32 -> 32 is not narrower on the output side: exchange H (32). */
  cr_expect_eq(w.fwd[1], 32);
  cr_expect_eq(w.transform_first[1], 0);
  cr_expect_eq(w.fwd[2], 4);
  cr_expect_eq(w.transform_first[2], 1);
  cr_expect_eq(w.per_epoch, 2 * 32 + 2 * 4);
  cr_expect_eq(halo_predict_setup_bytes(10, &w), 10 * 8 * 4);
}

Test(predict, wide_first_layer_with_dropout_has_no_backward_exchange) {
  /* 8 -> 64: H (X) is exchanged forward; dW = (A·X)ᵀ·dZ needs nothing more. */
  int32_t dims[] = {8, 64, 3};
  halo_widths w;
  cr_assert_eq(halo_predict_widths(dims, 3, 1, &w), HALO_OK);
  cr_expect_eq(w.fwd[0], 8);
  cr_expect_eq(w.bwd[0], 0);
  cr_expect_eq(w.per_epoch, 8 + 3 + 3);
}

Test(predict, cagnet_formula) {
  int32_t dims[] = {1433, 16, 7};
  cr_expect_eq(halo_predict_cagnet1d_bytes(2708, 4, dims, 3), 3LL * 2708 * (1449 + 23) * 4);
}

Test(predict, rejects_bad_widths) {
  int32_t dims[] = {16, 0, 7};
  halo_widths w;
  halo_log_set_quiet(1);
  cr_expect_eq(halo_predict_widths(dims, 3, 1, &w), HALO_ERR_ARG);
  cr_expect_eq(halo_predict_widths(dims, 1, 1, &w), HALO_ERR_ARG);
}
