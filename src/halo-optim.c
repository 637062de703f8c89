#include "halo-optim.h"

#include <math.h>

#include "halo-backend-impl.h"

void halo_optim_init(halo_optim *o, float lr) {
  *o = (halo_optim){
      .kind = HALO_OPTIMIZER_ADAM, .lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
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

double halo_optim_grad_norm(const float *g, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) sum += (double)g[i] * (double)g[i];
  return sqrt(sum);
}

float halo_optim_clip_factor(double norm, float max_norm) {
  const double coef = (double)max_norm / (norm + 1e-6);
  return coef < 1.0 ? (float)coef : 1.0f;
}

void halo_optim_step(halo_optim *o, halo_backend *be, float *params, float *grads, float *s1,
                     float *s2, float grad_scale) {
  o->steps++;
  for (int k = 0; k < o->ngroups; k++) {
    const halo_param_group *pg = &o->group[k];
    float *w = params + pg->offset, *g = grads + pg->offset;
    /* A factor of 1 would multiply every gradient by 1: exact, so skipped. */
    if (grad_scale < 1.0f) be->ops->scale(be, g, pg->count, grad_scale);
    switch (o->kind) {
      case HALO_OPTIMIZER_ADAM:
        be->ops->adam(be, w, g, s1 + pg->offset, s2 + pg->offset, pg->count, o->lr, o->beta1,
                      o->beta2, o->eps, pg->weight_decay, o->steps);
        break;
      case HALO_OPTIMIZER_ADAMW:
        be->ops->adamw(be, w, g, s1 + pg->offset, s2 + pg->offset, pg->count, o->lr, o->beta1,
                       o->beta2, o->eps, pg->weight_decay, o->steps);
        break;
      case HALO_OPTIMIZER_SGD:
        be->ops->sgd(be, w, g, s1 + pg->offset, pg->count, o->lr, o->momentum, pg->weight_decay,
                     o->nesterov);
        break;
    }
  }
}
