/* The optimiser: Adam (torch.optim.Adam's update, with L2 weight decay added
 * to the gradient) over parameter groups.  A group is a contiguous range of
 * a model's flat parameter array with its own weight decay, so that a model
 * states its decay policy (GCN's reference decays only the first layer) as
 * data, not as code in its update.
 */
#ifndef HALO_OPTIM_H
#define HALO_OPTIM_H

#include <stdint.h>

#include "halo-backend.h"
#include "halo-status.h"

/* At most this many groups: two per layer (weights, biases) of the deepest
 * model halo builds. */
#define HALO_OPTIM_MAX_GROUPS 64

typedef struct halo_param_group {
  int64_t offset, count; /* parameters [offset, offset + count) */
  float weight_decay;    /* L2, added to the gradient */
} halo_param_group;

typedef struct halo_optim {
  float lr, beta1, beta2, eps; /* Adam's; halo_optim_init sets torch's betas and eps */
  int ngroups;
  halo_param_group group[HALO_OPTIM_MAX_GROUPS];
  int64_t steps; /* updates taken; bias correction uses it */
} halo_optim;

/* Adam with learning rate lr and torch.optim.Adam's defaults (betas 0.9 and
 * 0.999, eps 1e-8), no groups, no steps. Local. */
void halo_optim_init(halo_optim *o, float lr);

/* Appends group [offset, offset + count) with weight decay wd; HALO_ERR_LIMIT
 * past HALO_OPTIM_MAX_GROUPS. Local. */
halo_status halo_optim_add_group(halo_optim *o, int64_t offset, int64_t count, float wd);

/* One Adam step on every group: params, grads and Adam's moments m and v are
 * backend buffers laid out alike (the model's flat arrays).  Asynchronous
 * on a device backend, as every compute slot. Local. */
void halo_optim_step(halo_optim *o, halo_backend *be, float *params, const float *grads, float *m,
                     float *v);

#endif /* HALO_OPTIM_H */
