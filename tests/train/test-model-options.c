/* The model's option table (model/halo-model-options.h): its defaults are
 * the runtime's, its keys and flags are unique, its checkpoint slots leave
 * no hole, and every row is a flag of halo-train. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "halo-model-options.h"
#include "halo-net.h"
#include "halo-train-args.h"

Test(model_options, defaults_are_the_runtime_defaults) {
  halo_net_options table, runtime;
  halo_model_options_default(&table);
  halo_net_options_default(&runtime);
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *opt = halo_model_option_at(i);
    cr_expect(halo_model_option_equal(opt, &table, &runtime), "%s: the table's default differs",
              opt->flag.name);
  }
  cr_expect_eq(table.sparse_features, runtime.sparse_features);
  cr_expect_eq(table.row_lists, runtime.row_lists);
}

Test(model_options, keys_flags_and_slots) {
  int slots[2][HALO_MOPT_MAX_SLOT + 1] = {{0}};
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    const halo_model_option *a = halo_model_option_at(i);
    cr_expect_eq(halo_model_option_of_key(a->key), a, "%s: its key is not unique", a->key);
    for (int j = 0; j < i; j++) cr_expect_str_neq(a->flag.name, halo_model_option_at(j)->flag.name);
    if (a->store == HALO_OPTION_NONE) continue;
    cr_assert(a->since == 0 || a->since == 1);
    cr_assert(a->slot >= 1 && a->slot <= HALO_MOPT_MAX_SLOT, "%s: slot %d", a->key, a->slot);
    slots[a->since][a->slot]++;
  }
  /* Each group's slots once each (the checkpoint writes them in turn; the
   * areas reserve ranges, so a group may have holes). */
  for (int g = 0; g < 2; g++)
    for (int s = 1; s <= HALO_MOPT_MAX_SLOT; s++)
      cr_expect_leq(slots[g][s], 1, "group %d: slot %d taken twice", g, s);
  cr_expect_null(halo_model_option_of_key("no_such_option"));
  cr_expect_null(halo_model_option_at(HALO_MOPT_COUNT));
}

Test(model_options, every_row_is_a_flag_of_halo_train) {
  const char *usage = halo_train_usage();
  for (int i = 0; i < HALO_MOPT_COUNT; i++) {
    char line[64];
    snprintf(line, sizeof line, "\n  %s ", halo_model_option_at(i)->flag.name);
    cr_expect(strstr(usage, line) != NULL, "--help does not list %s", line + 3);
  }
}

Test(model_options, values_as_text) {
  halo_net_options o;
  char text[64];
  halo_model_options_default(&o);
  o.activation = HALO_ACT_ELU;
  o.seed = UINT64_MAX;
  o.weight_decay_all = 1;
  halo_model_option_format(halo_model_option_at(HALO_MOPT_ACTIVATION), &o, text, sizeof text);
  cr_expect_str_eq(text, "elu");
  halo_model_option_format(halo_model_option_at(HALO_MOPT_SEED), &o, text, sizeof text);
  cr_expect_str_eq(text, "18446744073709551615");
  halo_model_option_format(halo_model_option_at(HALO_MOPT_WEIGHT_DECAY_ALL), &o, text, sizeof text);
  cr_expect_str_eq(text, "on");
  halo_model_option_format(halo_model_option_at(HALO_MOPT_LR), &o, text, sizeof text);
  cr_expect_str_eq(text, "0.01");
  halo_model_option_format(halo_model_option_at(HALO_MOPT_MODEL), &o, text, sizeof text);
  cr_expect_str_eq(text, "gcn");
}
