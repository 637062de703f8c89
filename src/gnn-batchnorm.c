/* BatchNorm in full-batch training (--norm batch; docs/models.md): the
 * batch is every node, so a column's statistics are sums over the owned
 * rows of every rank (never the halo rows, which other ranks own).
 *
 *   forward:  mean = Σ z / N,  var = Σ z² / N - mean²  (biased),
 *             xhat = (z - mean) / sqrt(var + eps),  y = gamma·xhat + beta
 *   backward: a = Σ dy / N,  b = Σ dy·xhat / N,
 *             dz = gamma / sqrt(var + eps) · (dy - a - xhat·b)
 *
 * Each direction's two column sums cross ranks in ONE allreduce of 2·C
 * values: doubles on the float path; with --deterministic the exact sums of
 * halo-exact.h (their limbs, after an allreduce of the two bounds), so
 * that every rank, at any P, gets the same bits and the normalisation,
 * row by row, is P-invariant.  These allreduces carry no halo rows: they
 * are not in the halo byte count (halo_net_stats.halo_bytes), as the
 * gradient allreduce is not.
 *
 * The running statistics (torch's: momentum m, running = (1 - m)·running +
 * m·statistic, the variance unbiased, N/(N-1)) are updated in double from
 * the global sums, so every rank holds the same; evaluation normalises
 * with them.
 */
#include <math.h>

#include "gnn-impl.h"
#include "halo-exact.h"
#include "halo-watchdog.h"

/* The site's columns. */
static int32_t site_cols(const layer *ly, int site) {
  return site == HALO_BN_MLP ? ly->d_mid : ly->d_out;
}

static float *site_xhat(layer *ly, int site) {
  return fbuf(site == HALO_BN_MLP ? &ly->xhat1 : &ly->xhat);
}

/* sx[c] = Σ x[:, c] and sxy[c] = Σ x[:, c]·y[:, c] over every rank's owned
 * rows (y NULL: y = x). Collective. */
static halo_status global_sums(halo_net *g, const float *x, const float *y, int32_t cols,
                               double *sx, double *sxy, const char *what) {
  halo_status st = HALO_OK;
  const int64_t n = g->n_owned;
  const halo_backend_ops *ops = g->ops;
  if (!g->opt.deterministic) {
    ops->bn_sums(g->be, x, y, n, cols, sx, sxy);
    for (int32_t c = 0; c < cols; c++) sx[cols + c] = sxy[c]; /* one buffer of 2·cols */
    HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, sx, 2 * cols, MPI_DOUBLE, MPI_SUM, g->comm, what));
    for (int32_t c = 0; c < cols; c++) sxy[c] = sx[cols + c];
    goto done;
  }
  /* Exact: the grids of Σ x (terms bounded by max |x|) and Σ x·y (by
   * max |x|·max |y|), agreed through the global maxima. */
  float local[2] = {ops->max_abs(g->be, x, n * cols), y ? ops->max_abs(g->be, y, n * cols) : 0.0f},
        bound[2];
  if (!y) local[1] = local[0];
  HALO_TRY(halo_watch_allreduce(local, bound, 2, MPI_FLOAT, MPI_MAX, g->comm, what));
  const int finite = isfinite((double)bound[0] * (double)bound[1]);
  const int e1 = finite ? halo_exact_exponent(bound[0]) : 0;
  const int e2 = finite ? halo_exact_exponent((double)bound[0] * (double)bound[1]) : 0;
  int64_t *limbs = g->bn_limbs;
  const int64_t per = HALO_EXACT_LIMBS;
  for (int64_t k = 0; k < 2 * cols * per; k++) limbs[k] = 0;
  if (finite) {
    ops->exact_tn(g->be, n, 1, cols, NULL, 1, x, cols, e1, g->threads, g->exact_work, limbs);
    for (int32_t c = 0; c < cols; c++)
      ops->exact_tn(g->be, n, 1, 1, x + c, cols, (y ? y : x) + c, cols, e2, g->threads,
                    g->exact_work, limbs + (cols + c) * per);
  }
  /* The limbs are reduced even when a bound is not finite, so the
   * collectives match; the statistics are then NaN on every rank. */
  HALO_TRY(halo_watch_allreduce(MPI_IN_PLACE, limbs, (int)(2 * cols * per), MPI_INT64_T, MPI_SUM,
                                g->comm, what));
  halo_exact_to_double(limbs, cols, e1, sx);
  halo_exact_to_double(limbs + cols * per, cols, e2, sxy);
  if (!finite)
    for (int32_t c = 0; c < cols; c++) sx[c] = sxy[c] = NAN;
done:
  return st;
}

halo_status gnn_bn_forward(halo_net *g, layer *ly, int site, float *z) {
  halo_status st = HALO_OK;
  const halo_layer_desc *d = ly->desc;
  const int32_t cols = site_cols(ly, site);
  const float *gamma = tensor_of(&g->params, ly, d->bn_tensor[site]), *beta = gamma + cols;
  float *run_mean = g->bn_running + d->bn_running[site], *run_var = run_mean + cols;
  double *scale = g->bn_scale + d->bn_running[site] / 2;
  double *shift = g->bn_col, *sq = g->bn_col + 2 * cols;
  const double eps = g->opt.bn_eps;
  if (!g->pass.training) {
    for (int32_t c = 0; c < cols; c++) {
      shift[c] = run_mean[c];
      sq[c] = 1.0 / sqrt((double)run_var[c] + eps);
    }
    g->ops->batchnorm(g->be, z, g->n_owned, cols, shift, sq, gamma, beta, NULL);
    goto done;
  }
  HALO_TRY(global_sums(g, z, NULL, cols, shift, sq, "the BatchNorm statistics"));
  const double n = (double)g->bn_rows, m = g->opt.bn_momentum;
  for (int32_t c = 0; c < cols; c++) {
    const double mean = shift[c] / n, var = fmax(sq[c] / n - mean * mean, 0.0);
    shift[c] = mean;
    scale[c] = 1.0 / sqrt(var + eps);
    /* torch divides by N - 1 for the running variance; one row has none. */
    const double unbiased = g->bn_rows > 1 ? var * n / (n - 1.0) : var;
    run_mean[c] = (float)((1.0 - m) * (double)run_mean[c] + m * mean);
    run_var[c] = (float)((1.0 - m) * (double)run_var[c] + m * unbiased);
  }
  g->ops->batchnorm(g->be, z, g->n_owned, cols, shift, scale, gamma, beta, site_xhat(ly, site));
done:
  return st;
}

halo_status gnn_bn_backward(halo_net *g, layer *ly, int site, float *dy, float *tmp) {
  halo_status st = HALO_OK;
  const halo_layer_desc *d = ly->desc;
  const int32_t cols = site_cols(ly, site);
  const int k = d->bn_tensor[site];
  const int64_t n = g->n_owned;
  const float *xhat = site_xhat(ly, site);
  double *a = g->bn_col, *b = g->bn_col + 2 * cols;
  /* dgamma = Σ dY ⊙ xhat, dbeta = Σ dY: gradients like any other. */
  g->ops->mul(g->be, tmp, dy, xhat, n * cols);
  const grad_term t[2] = {{.tensor = k, .b = tmp}, {.tensor = k + 1, .b = dy}};
  HALO_TRY(gnn_layer_grads(g, ly, t, 2));
  HALO_TRY(global_sums(g, dy, xhat, cols, a, b, "the BatchNorm backward sums"));
  for (int32_t c = 0; c < cols; c++) {
    a[c] /= (double)g->bn_rows;
    b[c] /= (double)g->bn_rows;
  }
  g->ops->batchnorm_backward(g->be, dy, xhat, n, cols, tensor_of(&g->params, ly, k),
                             g->bn_scale + d->bn_running[site] / 2, a, b);
done:
  return st;
}
