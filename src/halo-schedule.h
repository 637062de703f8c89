/* The learning rate by epoch (--lr-schedule, --warmup-epochs), in closed
 * form, as torch.optim.lr_scheduler's schedules give it:
 *
 *   warm-up, epochs e = 1..N (N = --warmup-epochs), LinearLR(start_factor
 *   1/N, total_iters N):   lr · (1/N + (1 - 1/N)·(e-1)/N)
 *   then, at j = e - 1 - N (SequentialLR: the schedule starts at j = 0
 *   after the warm-up):
 *     constant   lr
 *     step       lr · gamma^floor(j / step_size)                   (StepLR)
 *     cosine     lr_min + (lr - lr_min)·(1 + cos(pi·j / T))/2,
 *                T = epochs - N                         (CosineAnnealingLR)
 *     plateau    the rate ReduceLROnPlateau holds (halo_plateau)
 *
 * Every rate is computed in double from the options and the epoch alone
 * (plateau's from its state), so that a resumed run continues exactly, and
 * rounded to float once, for the optimiser.  docs/train.md ("Optimisers
 * and schedules") says where this differs from torch.
 */
#ifndef HALO_SCHEDULE_H
#define HALO_SCHEDULE_H

#include <stdint.h>

#include "halo-model-options.h"

/* ReduceLROnPlateau's state (mode min, threshold 1e-4 relative, cooldown 0,
 * eps 1e-8, factor --lr-gamma, patience --lr-patience, min_lr --lr-min). */
typedef struct halo_plateau {
  double lr;          /* the rate it holds now */
  double best;        /* the lowest validation loss so far; +inf before the first */
  int64_t bad_epochs; /* evaluations since the best (torch's num_bad_epochs) */
} halo_plateau;

/* The state before any evaluation: rate o->lr. Local. */
void halo_plateau_init(halo_plateau *p, const halo_net_options *o);

/* One ReduceLROnPlateau.step(loss): a loss below best·(1 - 1e-4) is the new
 * best; otherwise, past --lr-patience bad evaluations in a row, the rate
 * becomes max(rate·gamma, lr_min) (when that lowers it by more than 1e-8)
 * and the count restarts.  Returns 1 when the rate changed. Local. */
int halo_plateau_step(halo_plateau *p, const halo_net_options *o, double loss);

/* The learning rate of epoch `epoch` (from 1) of a schedule spanning
 * `epochs` epochs (cosine's T is epochs - N), as above; p is read by
 * plateau only (and may be NULL otherwise). Local. */
double halo_schedule_lr(const halo_net_options *o, int64_t epochs, int64_t epoch,
                        const halo_plateau *p);

/* Whether epoch `epoch`'s evaluation steps the plateau schedule: past the
 * warm-up. Local. */
int halo_schedule_plateau_steps(const halo_net_options *o, int64_t epoch);

#endif /* HALO_SCHEDULE_H */
