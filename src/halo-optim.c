#include "halo-optim.h"

#include "halo-backend-impl.h"

void halo_optim_init(halo_optim *o, float lr) {
  *o = (halo_optim){.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
}

halo_status halo_optim_add_group(halo_optim *o, int64_t offset, int64_t count, float wd) {
  halo_status st = HALO_OK;
  if (o->ngroups == HALO_OPTIM_MAX_GROUPS)
    HALO_FAIL(HALO_ERR_LIMIT, "the optimiser takes at most %d parameter groups",
              HALO_OPTIM_MAX_GROUPS);
  o->group[o->ngroups++] = (halo_param_group){.offset = offset, .count = count, .weight_decay = wd};
done:
  return st;
}

void halo_optim_step(halo_optim *o, halo_backend *be, float *params, const float *grads, float *m,
                     float *v) {
  o->steps++;
  for (int k = 0; k < o->ngroups; k++) {
    const halo_param_group *pg = &o->group[k];
    be->ops->adam(be, params + pg->offset, grads + pg->offset, m + pg->offset, v + pg->offset,
                  pg->count, o->lr, o->beta1, o->beta2, o->eps, pg->weight_decay, o->steps);
  }
}
