/* Model descriptions (model/halo-model.h) and the bytes predicted from them
 * (model/halo-predict.h), checked against hand-worked models. */
#include <criterion/criterion.h>

#include "halo-model.h"
#include "halo-predict.h"

static halo_model_comm describe_model(halo_model_config c, const int32_t *dims, int ndims,
                                      halo_model_desc *d) {
  cr_assert_eq(halo_model_describe(&c, dims, ndims, d), HALO_OK);
  return halo_model_comm_of(d);
}

static halo_model_comm describe(const int32_t *dims, int ndims, int input_dropout,
                                halo_model_desc *d) {
  halo_model_config c = halo_model_config_of(HALO_MODEL_GCN);
  c.input_dropout = input_dropout;
  return describe_model(c, dims, ndims, d);
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
  const halo_model_config c = halo_model_config_of(HALO_MODEL_GCN);
  cr_expect_eq(halo_model_describe(&c, dims, 3, &d), HALO_ERR_ARG);
  cr_expect_eq(halo_model_describe(&c, dims, 1, &d), HALO_ERR_ARG);
  halo_model_config gin = halo_model_config_of(HALO_MODEL_GIN);
  gin.mlp_hidden = 0;
  int32_t good[] = {16, 8, 7};
  cr_expect_eq(halo_model_describe(&gin, good, 3, &d), HALO_ERR_ARG);
}

Test(predict, sage_exchanges_its_narrow_side_and_never_caches) {
  /* 1433 -> 64 -> 7: T = H·W_l (64 columns) forward, dZ (64) backward for
   * dW_l = Hᵀ·Mᵀ·dZ; then 7 and 7.  Without input dropout the mean is not
   * cached (only GCN's Â·X is). */
  int32_t dims[] = {1433, 64, 7};
  for (int dropout = 0; dropout < 2; dropout++) {
    halo_model_desc d;
    halo_model_config c = halo_model_config_of(HALO_MODEL_SAGE);
    c.input_dropout = dropout;
    halo_model_comm m = describe_model(c, dims, 3, &d);
    cr_expect_eq(d.shape[0], HALO_LAYER_TRANSFORM);
    cr_expect_eq(d.comm[0].fwd, 64);
    cr_expect_eq(d.comm[0].bwd, 64);
    cr_expect_eq(d.comm[1].fwd, 7);
    cr_expect_eq(d.comm[1].bwd, 7);
    cr_expect_eq(halo_predict_setup_bytes(10, &m), 0);
    cr_expect_eq(d.params, 2 * 1433 * 64 + 64 + 2 * 64 * 7 + 7);
    cr_expect_eq(d.layer[0].ntensors, 3);
    cr_expect_eq(d.layer[1].tensor[2].offset, 2 * 1433 * 64 + 64 + 64 * 7 + 7);
  }
}

Test(predict, sage_max_aggregates_first_and_sends_its_ids_back) {
  /* 1433 -> 64 -> 7 with --aggr max: both layers aggregate first (the max
   * is not linear), layer 0 exchanges X (1433) forward and nothing back;
   * layer 1 exchanges H (64) forward, and its arg-max ids (64) and the
   * max's output gradient (64) backward; each single exchange is d_in wide. */
  int32_t dims[] = {1433, 64, 7};
  halo_model_desc d;
  halo_model_config c = halo_model_config_of(HALO_MODEL_SAGE);
  c.sage_max = 1;
  halo_model_comm m = describe_model(c, dims, 3, &d);
  cr_expect_eq(d.shape[0], HALO_LAYER_AGGREGATE);
  cr_expect_eq(d.shape[1], HALO_LAYER_AGGREGATE);
  cr_expect_eq(d.comm[0].fwd, 1433);
  cr_expect_eq(d.comm[0].bwd, 0);
  cr_expect_eq(d.comm[1].fwd, 64);
  cr_expect_eq(d.comm[1].bwd, 128);
  cr_expect_eq(d.comm[1].widest, 64);
  cr_expect_eq(halo_predict_widest(&m), 1433);
  cr_expect_eq(halo_predict_epoch_bytes(10, &m), 10 * (1433 + 64 + 128) * 4);
  cr_expect_eq(d.params, 2 * 1433 * 64 + 64 + 2 * 64 * 7 + 7, "the mean's parameters");
}

Test(predict, gin_aggregates_through_its_mlp_width) {
  /* 1433 -> [64] -> 64 -> [64] -> 7: layer 0 multiplies by W_1 first (64 <
   * 1433), layer 1 aggregates H (64 is not below 64). */
  int32_t dims[] = {1433, 64, 7};
  halo_model_desc d;
  halo_model_config c = halo_model_config_of(HALO_MODEL_GIN);
  c.mlp_hidden = 64;
  halo_model_comm m = describe_model(c, dims, 3, &d);
  cr_expect_eq(d.shape[0], HALO_LAYER_TRANSFORM);
  cr_expect_eq(d.shape[1], HALO_LAYER_AGGREGATE);
  cr_expect_eq(d.layer[0].d_mid, 64);
  cr_expect_eq(halo_predict_epoch_columns(&m), 64 + 64 + 64 + 64);
  const int64_t l0 = 1433 * 64 + 64 + 64 * 64 + 64, l1 = 64 * 64 + 64 + 64 * 7 + 7;
  cr_expect_eq(d.params, l0 + l1);
  c.train_eps = 1;
  describe_model(c, dims, 3, &d);
  cr_expect_eq(d.params, l0 + l1 + 2);
  cr_expect_eq(d.layer[1].tensor[4].offset, l0 + 1 + l1);
  /* A narrow input is aggregated and needs no backward exchange. */
  int32_t narrow[] = {8, 64, 3};
  m = describe_model(c, narrow, 3, &d);
  cr_expect_eq(d.comm[0].fwd, 8);
  cr_expect_eq(d.comm[0].bwd, 0);
}

Test(predict, model_names) {
  halo_model_kind k;
  cr_expect_eq(halo_model_parse("gcn", &k), HALO_OK);
  cr_expect_eq(k, HALO_MODEL_GCN);
  cr_expect_str_eq(halo_model_name(HALO_MODEL_GCN), "gcn");
  cr_expect_eq(halo_model_parse("sage", &k), HALO_OK);
  cr_expect_eq(k, HALO_MODEL_SAGE);
  cr_expect_eq(halo_model_parse("gin", &k), HALO_OK);
  cr_expect_eq(k, HALO_MODEL_GIN);
  cr_expect_eq(halo_model_parse("gat", &k), HALO_OK);
  cr_expect_eq(k, HALO_MODEL_GAT);
  cr_expect_str_eq(halo_model_names(), "gcn|sage|gin|gat");
  cr_expect_eq(halo_model_parse("gatv2", &k), HALO_ERR_ARG);
}

/* GAT on Cora with the paper's settings, counted by hand: layer 0 exchanges
 * T (8 heads × 8 = 64 columns) forward and dZ (64) + 3 scalars per head (24)
 * backward; layer 1 (one head of 7) 7 forward and 7 + 3 backward: 169. */
Test(predict, gat_heads_and_output_modes) {
  halo_model_config c = halo_model_config_of(HALO_MODEL_GAT);
  int32_t dims[] = {1433, 64, 7};
  halo_model_desc d;
  halo_model_comm m = describe_model(c, dims, 3, &d);
  cr_expect_eq(d.layer[0].heads, 8);
  cr_expect_eq(d.layer[0].concat, 1);
  cr_expect_eq(d.layer[0].d_mid, 64);
  cr_expect_eq(d.layer[1].heads, 1);
  cr_expect_eq(d.layer[1].concat, 0);
  cr_expect_eq(d.shape[0], HALO_LAYER_TRANSFORM);
  cr_expect_eq(d.shape[1], HALO_LAYER_TRANSFORM);
  cr_expect_eq(m.layer[0].fwd, 64);
  cr_expect_eq(m.layer[0].bwd, 88);
  cr_expect_eq(m.layer[1].fwd, 7);
  cr_expect_eq(m.layer[1].bwd, 10);
  cr_expect_eq(halo_predict_epoch_columns(&m), 169);
  cr_expect_eq(halo_predict_widest(&m), 88);
  /* W, a_src, a_dst, b per layer. */
  cr_expect_eq(d.layer[0].ntensors, 4);
  cr_expect_eq(d.layer[0].tensor[1].rows, 8);
  cr_expect_eq(d.layer[0].tensor[1].cols, 8);
  cr_expect_eq(d.params, 1433 * 64 + 2 * 64 + 64 + 64 * 7 + 2 * 7 + 7);
  /* 3 output heads, averaged: T is 21 wide, dZ 7, so 21 forward, 7 + 9 back. */
  c.output_heads = 3;
  m = describe_model(c, dims, 3, &d);
  cr_expect_eq(d.layer[1].d_mid, 21);
  cr_expect_eq(d.layer[1].d_out, 7);
  cr_expect_eq(m.layer[1].fwd, 21);
  cr_expect_eq(m.layer[1].bwd, 16);
  cr_expect_eq(d.layer[1].tensor[3].cols, 7); /* b: the averaged output's */
  /* A hidden width that the heads do not divide is refused. */
  int32_t odd[] = {1433, 60, 7};
  c.heads = 8;
  cr_expect_eq(halo_model_describe(&c, odd, 3, &d), HALO_ERR_ARG);
}
