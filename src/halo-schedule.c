#include "halo-schedule.h"

#include <math.h>

/* torch's defaults, which halo does not expose as flags. */
static const double PLATEAU_THRESHOLD = 1e-4, PLATEAU_EPS = 1e-8;
/* Python's math.pi, which torch's CosineAnnealingLR uses. */
static const double PI = 3.141592653589793;

void halo_plateau_init(halo_plateau *p, const halo_net_options *o) {
  *p = (halo_plateau){.lr = o->lr, .best = INFINITY, .bad_epochs = 0};
}

int halo_plateau_step(halo_plateau *p, const halo_net_options *o, double loss) {
  if (loss < p->best * (1.0 - PLATEAU_THRESHOLD)) {
    p->best = loss;
    p->bad_epochs = 0;
  } else {
    p->bad_epochs++;
  }
  if (p->bad_epochs <= o->lr_patience) return 0;
  const double lowered = fmax(p->lr * (double)o->lr_gamma, (double)o->lr_min);
  p->bad_epochs = 0;
  if (p->lr - lowered <= PLATEAU_EPS) return 0;
  p->lr = lowered;
  return 1;
}

double halo_schedule_lr(const halo_net_options *o, int64_t epochs, int64_t epoch,
                        const halo_plateau *p) {
  const double lr = o->lr;
  const int64_t n = o->warmup_epochs > 0 ? o->warmup_epochs : 0;
  if (n > 0 && epoch <= n) {
    const double start = 1.0 / (double)n;
    return lr * (start + (1.0 - start) * (double)(epoch - 1) / (double)n);
  }
  const int64_t j = epoch - 1 - n;
  switch ((halo_lr_schedule)o->lr_schedule) {
    case HALO_LR_STEP: /* the flag's range is >= 1; a zeroed struct's 0 reads as 1 */
      return lr *
             pow((double)o->lr_gamma, (double)(j / (o->lr_step_size > 0 ? o->lr_step_size : 1)));
    case HALO_LR_COSINE: {
      const double t_max = (double)(epochs - n > 0 ? epochs - n : 1);
      const double lo = o->lr_min;
      return lo + (lr - lo) * (1.0 + cos(PI * (double)j / t_max)) / 2.0;
    }
    case HALO_LR_PLATEAU:
      return p ? p->lr : lr;
    case HALO_LR_CONSTANT:
      break;
  }
  return lr;
}

int halo_schedule_plateau_steps(const halo_net_options *o, int64_t epoch) {
  return o->lr_schedule == HALO_LR_PLATEAU && epoch > o->warmup_epochs;
}
