/* The optimiser: torch.optim's Adam (L2 weight decay added to the
 * gradient), AdamW (decoupled weight decay) or SGD (momentum, Nesterov),
 * over parameter groups, with torch.nn.utils.clip_grad_norm_'s clipping.
 * A group is a contiguous range of a model's flat parameter array with its
 * own weight decay, so that a model states its decay policy (GCN's
 * reference decays only the first layer) as data, not as code in its
 * update.  The learning rate is set before each step (the schedule's,
 * src/halo-schedule.h).
 */
#ifndef HALO_OPTIM_H
#define HALO_OPTIM_H

#include <stdint.h>

#include "halo-backend.h"
#include "halo-model-options.h"
#include "halo-status.h"

/* At most this many groups: two per layer (weights, biases) of the deepest
 * model halo builds. */
#define HALO_OPTIM_MAX_GROUPS 64

typedef struct halo_param_group {
  int64_t offset, count; /* parameters [offset, offset + count) */
  float weight_decay;    /* adam, sgd: L2, added to the gradient; adamw: decoupled */
} halo_param_group;

typedef struct halo_optim {
  halo_optimizer kind;
  float lr, beta1, beta2, eps; /* Adam's; halo_optim_init sets torch's betas and eps */
  float momentum;              /* sgd */
  int nesterov;                /* sgd */
  float clip;                  /* the gradients' largest L2 norm; 0: no clipping */
  int ngroups;
  halo_param_group group[HALO_OPTIM_MAX_GROUPS];
  int64_t steps; /* updates taken; Adam's bias correction uses it */
} halo_optim;

/* Adam with learning rate lr and torch.optim.Adam's defaults (betas 0.9 and
 * 0.999, eps 1e-8), no groups, no steps, no clipping. Local. */
void halo_optim_init(halo_optim *o, float lr);

/* Appends group [offset, offset + count) with weight decay wd; HALO_ERR_LIMIT
 * past HALO_OPTIM_MAX_GROUPS. Local. */
halo_status halo_optim_add_group(halo_optim *o, int64_t offset, int64_t count, float wd);

/* The L2 norm of g[0, n), its squares summed in double in index order, so
 * that the same gradient gives the same bits on any rank and thread count.
 * Local. */
double halo_optim_grad_norm(const float *g, int64_t n);

/* torch.nn.utils.clip_grad_norm_'s factor for a gradient of L2 norm `norm`:
 *   min(1, max_norm / (norm + 1e-6)), rounded to float. Local. */
float halo_optim_clip_factor(double norm, float max_norm);

/* One step on every group: params, grads and the optimiser's state s1 and s2
 * are backend buffers laid out alike (the model's flat arrays).  Adam and
 * AdamW keep their moments m and v in s1 and s2; SGD its momentum buffer in
 * s1.  A grad_scale below 1 (the clipping) first scales the gradients in
 * place, as torch's clip_grad_norm_ does.  Asynchronous on a device
 * backend, as every compute slot. Local. */
void halo_optim_step(halo_optim *o, halo_backend *be, float *params, float *grads, float *s1,
                     float *s2, float grad_scale);

#endif /* HALO_OPTIM_H */
