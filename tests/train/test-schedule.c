/* The learning-rate schedules (src/halo-schedule.h) against torch's
 * recursive ("chainable") forms, written here from torch.optim.lr_scheduler's
 * get_lr(), which reach each epoch's rate by updating the previous one
 * (halo's closed forms and these agree to rounding), and ReduceLROnPlateau
 * and the clipping factor against hand-worked sequences. */
#include <criterion/criterion.h>
#include <math.h>

#include "halo-model-options.h"
#include "halo-optim.h"
#include "halo-schedule.h"

static const double PI = 3.141592653589793;

static halo_net_options options(halo_lr_schedule s, int warmup) {
  halo_net_options o;
  halo_model_options_default(&o);
  o.lr = 0.05f;
  o.lr_schedule = s;
  o.warmup_epochs = warmup;
  return o;
}

static void expect_close(double got, double want, const char *what, int epoch) {
  cr_expect(fabs(got - want) <= 1e-12 * fabs(want), "%s epoch %d: %.17g, recursive form %.17g",
            what, epoch, got, want);
}

Test(schedule, constant_is_the_option_bit_for_bit) {
  const halo_net_options o = options(HALO_LR_CONSTANT, 0);
  for (int e = 1; e <= 50; e++)
    cr_expect_eq((float)halo_schedule_lr(&o, 50, e, NULL), o.lr, "epoch %d", e);
}

Test(schedule, step_is_steplr) {
  halo_net_options o = options(HALO_LR_STEP, 0);
  o.lr_step_size = 7;
  o.lr_gamma = 0.5f;
  /* StepLR.get_lr: at last_epoch k > 0 with k % step == 0, lr·gamma. */
  double lr = o.lr;
  for (int k = 0; k < 40; k++) {
    if (k > 0 && k % o.lr_step_size == 0) lr *= (double)o.lr_gamma;
    expect_close(halo_schedule_lr(&o, 40, k + 1, NULL), lr, "step", k + 1);
  }
}

/* CosineAnnealingLR.get_lr over T epochs (k = last_epoch). */
static double cosine_next(double lr, double base, double lo, int k, int t) {
  if (k == 0) return base;
  if ((k - 1 - t) % (2 * t) == 0) return lr + (base - lo) * (1 - cos(PI / t)) / 2;
  return (1 + cos(PI * k / t)) / (1 + cos(PI * (k - 1) / t)) * (lr - lo) + lo;
}

Test(schedule, cosine_is_cosineannealinglr) {
  halo_net_options o = options(HALO_LR_COSINE, 0);
  o.lr_min = 1e-3f;
  const int epochs = 30;
  double lr = o.lr;
  for (int k = 0; k < epochs; k++) {
    lr = cosine_next(lr, o.lr, o.lr_min, k, epochs);
    cr_expect(fabs(halo_schedule_lr(&o, epochs, k + 1, NULL) - lr) <= 1e-12, "cosine epoch %d",
              k + 1);
  }
  /* Half way down, exactly the mean of the ends. */
  expect_close(halo_schedule_lr(&o, epochs, 16, NULL), ((double)o.lr + (double)o.lr_min) / 2,
               "middle", 16);
}

/* LinearLR(start_factor 1/N, end_factor 1, total_iters N).get_lr. */
static double linear_next(double lr, double base, int k, int n) {
  const double start = 1.0 / n;
  if (k == 0) return base * start;
  if (k > n) return lr;
  return lr * (1.0 + (1.0 - start) / (n * start + (k - 1) * (1.0 - start)));
}

Test(schedule, warmup_is_linearlr_then_the_schedule) {
  const int n = 5, epochs = 40;
  halo_net_options o = options(HALO_LR_COSINE, n);
  /* Epoch 1 runs at lr/N; the warm-up's rates, then (SequentialLR) the
   * cosine from its start over the epochs left. */
  expect_close(halo_schedule_lr(&o, epochs, 1, NULL), (double)o.lr / n, "warm-up", 1);
  double lr = 0.0;
  for (int k = 0; k < n; k++) {
    lr = linear_next(lr, o.lr, k, n);
    expect_close(halo_schedule_lr(&o, epochs, k + 1, NULL), lr, "warm-up", k + 1);
  }
  double c = o.lr;
  for (int k = 0; k < epochs - n; k++) {
    c = cosine_next(c, o.lr, o.lr_min, k, epochs - n);
    cr_expect(fabs(halo_schedule_lr(&o, epochs, n + k + 1, NULL) - c) <= 1e-12,
              "after warm-up, epoch %d", n + k + 1);
  }
  o.lr_schedule = HALO_LR_STEP;
  o.lr_step_size = 3;
  o.lr_gamma = 0.1f;
  expect_close(halo_schedule_lr(&o, epochs, n + 1, NULL), o.lr, "step after warm-up", n + 1);
  expect_close(halo_schedule_lr(&o, epochs, n + 4, NULL), (double)o.lr * (double)o.lr_gamma,
               "step after warm-up", n + 4);
  cr_expect_eq(halo_schedule_plateau_steps(&o, n + 1), 0, "not plateau");
  o.lr_schedule = HALO_LR_PLATEAU;
  cr_expect_eq(halo_schedule_plateau_steps(&o, n), 0, "plateau waits out the warm-up");
  cr_expect_eq(halo_schedule_plateau_steps(&o, n + 1), 1);
}

Test(schedule, plateau_is_reducelronplateau) {
  halo_net_options o = options(HALO_LR_PLATEAU, 0);
  o.lr_patience = 2;
  o.lr_gamma = 0.5f;
  o.lr_min = 0.01f;
  halo_plateau p;
  halo_plateau_init(&p, &o);
  /* Worked by hand (mode min, threshold 1e-4 relative): 1.0 and 0.9 are
   * new bests; 0.89995 is within 0.9·(1 - 1e-4) = 0.89991, so not better;
   * with 0.95 and 0.91 that is three bad evaluations, more than the
   * patience: 0.05 → 0.025, the count restarts.  Three more bad ones:
   * 0.0125, then the floor 0.01; then 0.01·0.5 is below the floor and the
   * rate stays (torch's eps test). */
  const double losses[] = {1.0,  0.9,  0.89995, 0.95, 0.91, 0.92, 0.93, 0.94,
                           0.95, 0.96, 0.97,    0.98, 0.99, 1.0,  1.1};
  const double want[] = {0.05,   0.05,   0.05, 0.05, 0.025, 0.025, 0.025, 0.0125,
                         0.0125, 0.0125, 0.01, 0.01, 0.01,  0.01,  0.01};
  const int changed[] = {0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0};
  for (int i = 0; i < (int)(sizeof losses / sizeof losses[0]); i++) {
    const int c = halo_plateau_step(&p, &o, losses[i]);
    cr_expect(fabs(p.lr - want[i]) < 1e-9, "evaluation %d: rate %.9g, want %.9g", i + 1, p.lr,
              want[i]);
    cr_expect_eq(c, changed[i], "evaluation %d", i + 1);
    cr_expect_eq(halo_schedule_lr(&o, 100, i + 2, &p), p.lr);
  }
  cr_expect_eq(p.best, 0.9);
  /* A NaN loss is never better. */
  halo_plateau_init(&p, &o);
  halo_plateau_step(&p, &o, NAN);
  cr_expect_eq(p.bad_epochs, 1);
}

Test(clip, factor_is_clip_grad_norm) {
  /* g = (3, 4): norm 5. max_norm 1: 1/(5 + 1e-6); 10: no clipping. */
  const float g[2] = {3.0f, 4.0f};
  const double norm = halo_optim_grad_norm(g, 2);
  cr_expect_eq(norm, 5.0);
  cr_expect_eq(halo_optim_clip_factor(norm, 1.0f), (float)(1.0 / (5.0 + 1e-6)));
  cr_expect_eq(halo_optim_clip_factor(norm, 10.0f), 1.0f);
  cr_expect_eq(halo_optim_clip_factor(0.0, 1.0f), 1.0f);
}
