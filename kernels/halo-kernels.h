/* Dense operations of the CPU backend.  Each is the oracle for its CUDA twin
 * (kernels/halo-kernels-cuda.h), which takes the same arguments plus a stream.
 *
 * Matrices are row-major float32 with `rows` rows and `cols` columns, packed
 * (leading dimension = cols) unless an ld argument says otherwise.  All calls
 * are Local and thread-parallel with OpenMP; none allocates.
 */
#ifndef HALO_KERNELS_H
#define HALO_KERNELS_H

#include <stdint.h>

#include "halo-csr.h"
#include "halo-gat.h"

/* C = alpha · op(A) · op(B) + beta · C, through CBLAS (row-major), or, for
 * the tall-skinny Aᵀ·B of a weight gradient (at least 1,024 rows), halo's
 * own register-tiled kernel (in tiles of 16,384 cells where C is larger),
 * and for a narrow A·op(B) (at most 64 columns, alpha 1, beta 0 or 1),
 * halo_cpu_gemm_rows or _acc (kernels/cpu-gemm.c).  What goes to CBLAS is
 * split by rows of C over the OpenMP team, each block one CBLAS call: the
 * caller runs OpenBLAS on one thread (openblas_set_num_threads(1), as
 * halo-train does), or the two pools nest. */
void halo_cpu_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc);

/* The vector widths of halo_cpu_gemm's own kernel. */
typedef enum { HALO_CPU_ISA_PLAIN = 0, HALO_CPU_ISA_AVX2 = 1, HALO_CPU_ISA_AVX512 = 2 } halo_cpu_isa;

/* Limits halo_cpu_gemm's own kernel to vectors of at most `limit` (the
 * default: AVX512, the widest the CPU has), for tests that run each of its
 * paths on one machine; returns the width it will use.  Not thread-safe
 * against a running product. */
halo_cpu_isa halo_cpu_gemm_limit_isa(halo_cpu_isa limit);

/* C = A · op(B), row by row in a fixed order, so that row i of C depends
 * only on row i of A and on B: not on m, on the other rows or the row's
 * offset, on the thread count, nor on the CPU's vector width.  Each element
 * is, with every product and every sum rounded to float (no fused
 * multiply-add) and p ascending:
 *   C[i, j] = (...((0 + A[i, 0]·B'[0, j]) + A[i, 1]·B'[1, j]) + ...) + A[i, k-1]·B'[k-1, j]
 * where B' = op(B): B is k × n (ldb >= n), or n × k (ldb >= k) when
 * trans_b.  A is m × k (lda >= k).  C (m × n, ldc >= n) is overwritten, NaN
 * included; k = 0 gives zeros.  C overlaps neither A nor B.  For the
 * per-row products of a layer (H·W, G·Wᵀ), whose rows are split over ranks;
 * halo_cpu_gemm (CBLAS) gives rows that depend on m and on the thread
 * count. */
void halo_cpu_gemm_rows(int trans_b, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float *c, int64_t ldc);

/* C += A · op(B) with halo_cpu_gemm_rows's contract, each element's sum
 * starting from its C instead of 0:
 *   C[i, j] = (...((C[i, j] + A[i, 0]·B'[0, j]) + A[i, 1]·B'[1, j]) + ...)
 * k = 0 leaves C as it is.  halo_cpu_gemm's beta = 1 of such a product
 * (SAGE's Z += H·W_r), where OpenBLAS ran at 0.4x of it. */
void halo_cpu_gemm_rows_acc(int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                            int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

/* Y[i, :] += bias[:] for every row. */
void halo_cpu_bias_add(float *y, int64_t rows, int64_t cols, const float *bias);

/* grad_bias[:] = Σ_i G[i, :] (overwrites; summed in double per column). */
void halo_cpu_colsum(const float *g, int64_t rows, int64_t cols, float *grad_bias);

/* Y = max(X, 0) in place. */
void halo_cpu_relu(float *y, int64_t n);

/* G[i] = 0 where Y[i] <= 0 (Y is the ReLU output), in place. */
void halo_cpu_relu_backward(float *g, const float *y, int64_t n);

/* Y += (alpha + (p ? *p : 0)) · X over n floats: GIN's self term (alpha 1,
 * p = &ε, which may live in the backend's memory) and a residual (p NULL).
 * Y and X do not overlap. */
void halo_cpu_axpy(float *y, const float *x, int64_t n, float alpha, const float *p);

/* ELU with alpha 1 in place: Y = Y < 0 ? expm1(Y) : Y, expm1 halo's own in
 * double (vectorised), the correctly rounded float but within 2^-52 of a
 * midpoint (glibc's expm1f is within 1 ulp). */
void halo_cpu_elu(float *y, int64_t n);

/* G[i] *= Y[i] > 0 ? 1 : Y[i] + 1, in place (Y is the ELU output). */
void halo_cpu_elu_backward(float *g, const float *y, int64_t n);

/* LeakyReLU in place: Y = Y < 0 ? slope·Y : Y, 0 < slope <= 1. */
void halo_cpu_leaky_relu(float *y, int64_t n, float slope);

/* G[i] *= Y[i] < 0 ? slope : 1, in place (Y is the LeakyReLU output: a
 * positive slope keeps the input's sign, so the output says the branch). */
void halo_cpu_leaky_relu_backward(float *g, const float *y, int64_t n, float slope);

/* GELU, torch's exact form: Y = X·Φ(X), Φ(X) = 0.5·erfc(-X/√2) (torch's
 * 0.5·(1 + erf(X/√2)), without its cancellation far below 0), out of place
 * (GELU is not monotonic, so its backward needs X, which stays).  Each value
 * is computed in double and rounded once; erfc is halo's own, vectorised
 * (e^(-z²) times a Chebyshev series, about 1e-13 relative: kernels/
 * cpu-activation.c).  Y and X do not overlap. */
void halo_cpu_gelu_to(float *y, const float *x, int64_t n);

/* G[i] *= Φ(X[i]) + X[i]·φ(X[i]), in place (X is GELU's input); in double,
 * rounded once. */
void halo_cpu_gelu_backward(float *g, const float *x, int64_t n);

/* Each row divided by its L2 norm, as torch.nn.functional.normalize:
 *   norm[i] = max(||Y[i, :]||, 1e-12),  Y[i, :] /= norm[i]
 * with the sum of squares in double over ascending columns (a row's result
 * depends on that row alone). */
void halo_cpu_l2_normalize(float *y, int64_t rows, int64_t cols, float *norm);

/* Its backward, in place, from the normalised rows Y and the norms:
 *   G[i, :] = (G[i, :] - Y[i, :] · (Y[i, :] · G[i, :])) / norm[i]
 * and G[i, :] / norm[i] alone for a row whose norm was clamped to 1e-12. */
void halo_cpu_l2_normalize_backward(float *g, const float *y, const float *norm, int64_t rows,
                                    int64_t cols);

/* LayerNorm over each row (torch.nn.LayerNorm(cols), eps 1e-5), in place:
 *   mean_i, var_i = the row's mean and biased variance (double, ascending)
 *   rstd[i] = 1 / sqrt(var_i + 1e-5),  xhat[i, :] = (Y[i, :] - mean_i) · rstd[i]
 *   Y[i, :] = xhat[i, :] · gamma + beta
 * xhat (rows × cols) and rstd (rows) are kept for the backward. */
void halo_cpu_layernorm(float *y, int64_t rows, int64_t cols, const float *gamma,
                        const float *beta, float *xhat, float *rstd);

/* Its backward, in place: G holds dLoss/dY on entry and dLoss/dX on return,
 *   d = G · gamma,  G[i, :] = rstd[i] · (d - mean(d) - xhat[i, :] · mean(d · xhat[i, :]))
 * with the row means in double, ascending.  (dgamma = Σ_i G ⊙ xhat and
 * dbeta = Σ_i G are sums over nodes, which the caller takes before.) */
void halo_cpu_layernorm_backward(float *g, const float *xhat, const float *rstd,
                                 const float *gamma, int64_t rows, int64_t cols);

/* BatchNorm's column sums over `rows` rows of X and Y (rows × cols), in
 * double: sx[c] = Σ_i X[i, c] and sxy[c] = Σ_i X[i, c] · Y[i, c] (Y NULL:
 * Y = X, the sum of squares).  Rows ascending. */
void halo_cpu_bn_sums(const float *x, const float *y, int64_t rows, int64_t cols, double *sx,
                      double *sxy);

/* BatchNorm's normalisation with column statistics, in place:
 *   xhat[i, c] = (Y[i, c] - shift[c]) · scale[c],  Y[i, c] = gamma[c] · xhat[i, c] + beta[c]
 * in double, each rounded once to float; xhat (rows × cols) is kept when
 * not NULL.  Training passes the batch's mean and 1/sqrt(var + eps),
 * evaluation the running ones. */
void halo_cpu_batchnorm(float *y, int64_t rows, int64_t cols, const double *shift,
                        const double *scale, const float *gamma, const float *beta, float *xhat);

/* Its backward, in place: G holds dLoss/dY on entry and dLoss/dX on return,
 *   G[i, c] = gamma[c] · scale[c] · (G[i, c] - a[c] - xhat[i, c] · b[c])
 * with a = Σ_i G / N and b = Σ_i G ⊙ xhat / N over every rank's N rows,
 * which the caller reduces (src/gnn-batchnorm.c). */
void halo_cpu_batchnorm_backward(float *g, const float *xhat, int64_t rows, int64_t cols,
                                 const float *gamma, const double *scale, const double *a,
                                 const double *b);

/* OUT[i] = A[i] · B[i] over n floats (OUT may be A or B). */
void halo_cpu_mul(float *out, const float *a, const float *b, int64_t n);

/* Inverted dropout keyed by global row id: element (i, j) is kept iff
 * halo_dropout_keep(key, global_id[i], j, p), and kept values are scaled by
 * halo_dropout_scale(p) = 1/(1-p) (core/halo-rng.h).  Applied in place to
 * Y; the same call on a gradient applies the same mask.
 * key = halo_rng_key(seed, HALO_RNG_DROPOUT, epoch, layer). */
void halo_cpu_dropout(float *y, int64_t rows, int64_t cols, const int64_t *global_id, uint64_t key,
                      float p);

/* DST = dropout(SRC) with the mask of halo_cpu_dropout, in one pass; a copy
 * when p <= 0.  DST and SRC (rows × cols each) do not overlap. */
void halo_cpu_dropout_to(float *dst, const float *src, int64_t rows, int64_t cols,
                         const int64_t *global_id, uint64_t key, float p);

/* halo_cpu_dropout_to's bits for p > 0, on the calling thread alone: for
 * a kernel that drops its own chunks of rows inside its threads
 * (halo_cpu_exact_tn_dropped). */
void halo_cpu_dropout_block(float *dst, const float *src, int64_t rows, int64_t cols,
                            const int64_t *global_id, uint64_t key, float p);

/* halo_cpu_dropout_to, returning max |DST| as halo_cpu_max_abs reports it
 * (+inf when a value is not finite), found in the same pass: the exact
 * sums' bound of a block of the dropped input (--deterministic). */
float halo_cpu_dropout_to_max(float *dst, const float *src, int64_t rows, int64_t cols,
                              const int64_t *global_id, uint64_t key, float p);

/* The mask of halo_cpu_dropout seen through the non-zeros of a CSR matrix
 * (indptr size rows+1, indices and values size indptr[rows]; values NULL
 * means every value is 1):
 *   out[k] = values[k] · keep(node, col) · 1/(1-p)
 * with (node, col) = (global_id[r], indices[k]) for the non-zero k of row r,
 * or (global_id[indices[k]], r) when `transposed` (the matrix holds Xᵀ).
 * out has indptr[rows] floats and overlaps neither values nor indices. */
void halo_cpu_csr_dropout(const int64_t *indptr, const int32_t *indices, const float *values,
                          int64_t rows, int transposed, const int64_t *global_id, uint64_t key,
                          float p, float *out);

/* Masked softmax cross-entropy over the rows listed in `mask` (size nmask):
 *   loss_sum   = Σ_{i in mask} -log softmax(Z[i])[label[i]], each term
 *                rounded to a multiple of 2^-30 (so the sum is the same for
 *                any thread count); NaN when a label is outside [0, cols)
 *                or a row's loss is not below 2^32 (non-finite logits)
 *   correct    = number of i in mask with argmax Z[i] == label[i]
 *   G[i, :]    = (softmax(Z[i]) - onehot(label[i])) · grad_scale for i in mask, 0 elsewhere
 * G may be NULL (evaluation only). G has `rows` rows, all of which are written. */
void halo_cpu_softmax_xent(const float *z, int64_t rows, int64_t cols, const int32_t *labels,
                           const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                           double *loss_sum, int64_t *correct);

/* Masked binary cross-entropy with logits, for multi-label rows of `cols`
 * tasks (PyTorch's BCEWithLogitsLoss), over the rows listed in `mask`:
 *   loss_sum   = Σ_{i in mask} Σ_{t : Y[i,t] >= 0} max(z, 0) - z·y + log1p(exp(-|z|))
 *                with z = Z[i,t], y = Y[i,t]; each row's sum (double,
 *                ascending t) rounded to a multiple of 2^-30 as in
 *                softmax_xent; NaN when a target is outside {-1, 0, 1} or a
 *                row's loss is not below 2^32 (non-finite logits)
 *   correct    = number of labelled (i, t) with (Z[i,t] > 0) == (Y[i,t] == 1)
 *   G[i, t]    = (sigmoid(Z[i,t]) - Y[i,t]) · grad_scale for the labelled
 *                entries of the listed rows, 0 elsewhere
 * Y (rows × cols, int8) holds 1, 0, or -1 for a missing entry, which adds
 * no loss and no gradient.  G may be NULL; otherwise all `rows` rows are
 * written.  Each entry depends on its row alone, so the results do not
 * depend on the thread count or on how rows are split among ranks. */
void halo_cpu_sigmoid_bce(const float *z, int64_t rows, int64_t cols, const int8_t *targets,
                          const int32_t *mask, int64_t nmask, float grad_scale, float *g,
                          double *loss_sum, int64_t *correct);

/* One Adam step (Kingma & Ba) with L2 weight decay added to the gradient, as
 * in PyTorch's Adam(weight_decay=wd):
 *   g' = g + wd·w; m = b1·m + (1-b1)·g'; v = b2·v + (1-b2)·g'²
 *   w -= lr · (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps),   t >= 1 */
void halo_cpu_adam(float *w, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                   float b2, float eps, float wd, int64_t t);

/* One AdamW step (Loshchilov & Hutter), as PyTorch's AdamW: the decay is
 * decoupled from the gradient,
 *   w = w · (1 - lr·wd)   (the factor rounded to float once, from double)
 * then halo_cpu_adam's step with no L2 term. */
void halo_cpu_adamw(float *w, const float *g, float *m, float *v, int64_t n, float lr, float b1,
                    float b2, float eps, float wd, int64_t t);

/* One SGD step, as PyTorch's SGD(momentum=mu, dampening=0, nesterov):
 *   d = g + wd·w
 *   mu > 0:  buf = mu·buf + d;  d = nesterov ? d + mu·buf : buf
 *   w = w - lr·d
 * buf starts at zero, which gives torch's first step (buf = d) exactly;
 * with mu = 0 buf is not touched (it may be NULL). */
void halo_cpu_sgd(float *w, const float *g, float *buf, int64_t n, float lr, float mu, float wd,
                  int nesterov);

/* x = x · s (--clip-grad-norm's scaling, as torch's grads.mul_(coef)). */
void halo_cpu_scale(float *x, int64_t n, float s);

/* dst[i, :] = src[idx[i], :] for i in [0, n): packs rows to send. */
void halo_cpu_pack(float *dst, const float *src, int64_t cols, const int32_t *idx, int64_t n);

/* dst[idx[i], :] = src[i, :] for i in [0, n). */
void halo_cpu_unpack(float *dst, const float *src, int64_t cols, const int32_t *idx, int64_t n);

/* Low-bit rows (core/halo-quant.h): dst row i (halo_quant_row_bytes(prec,
 * cols) bytes) = the packed src[idx[i], :], its rounding drawn from (key,
 * gid[i], column); i in [0, n). */
void halo_cpu_quant_pack(uint8_t *dst, const float *src, int64_t cols, const int32_t *idx,
                         const int64_t *gid, int64_t n, int prec, uint64_t key);

/* dst[i, :] = the row packed at src + i · halo_quant_row_bytes(prec, cols),
 * for i in [0, n). */
void halo_cpu_quant_unpack(float *dst, const uint8_t *src, int64_t cols, int64_t n, int prec);

/* Divides each row by its sum (rows summing to 0 are left as they are). */
void halo_cpu_row_normalize(float *x, int64_t rows, int64_t cols);

/* --- GAT (halo-gat.h; cpu-gat.c) ------------------------------------------
 * T is rows × K·F, the scores S rows × 2K (a_src·T then a_dst·T per head),
 * the node terms rows × halo_gat_node_cols(g); `adj` is A + I over the owned
 * rows with local columns in ascending global id, and the graph is
 * symmetric. */

/* S[r] = (a_src[k]·T[r, k] for each k, a_dst[k]·T[r, k] for each k), with
 * a_src and a_dst K × F. */
void halo_cpu_gat_scores(const halo_gat_layer *g, const float *t, int64_t rows,
                         const float *a_src, const float *a_dst, float *s);

/* For every owned row i: out[i, k] (n_owned × K·F) = Σ_j α'_ij T[j, k] over
 * row i of adj, α' the dropped softmax coefficients; Z[i] (n_owned ×
 * d_out) = the heads' outputs concatenated, or their mean; and the
 * softmax's max and inverse sum (1/l) per head into node[i]'s columns
 * d_out.. and d_out+K.. . */
void halo_cpu_gat_attend(const halo_gat_layer *g, const halo_csr *adj, const int64_t *global_id,
                         const float *t, const float *s, float *out, float *z, float *node);

/* For rows [0, rows): node[i]'s first d_out columns = dZ[i], and its c
 * columns = dout_i,k · out_i,k per head (halo_gat_node_terms_row). */
void halo_cpu_gat_node_terms(const halo_gat_layer *g, const float *dz, const float *out,
                             int64_t rows, float *node);

/* For every owned row j, from the node terms of j and of its neighbours:
 * dT[j] (n_owned × K·F) = Σ_{i: j ∈ N(i) ∪ {i}} α'_ij dout_i + dsrc_j·a_src + ddst_j·a_dst,
 * and the attention vectors' per-row terms: att_grad's first n_owned rows
 * dsrc_j,k·T[j, k], its next n_owned rows ddst_j,k·T[j, k] (K·F columns). */
void halo_cpu_gat_attend_backward(const halo_gat_layer *g, const halo_csr *adj,
                                  const int64_t *global_id, const float *t, const float *s,
                                  const float *node, const float *a_src, const float *a_dst,
                                  float *dt, float *att_grad);

/* --- GraphSAGE's max aggregator (cpu-sage-max.c) ---------------------------
 * `adj` is A over the owned rows with local columns in ascending global id
 * (its values are not read), the graph symmetric; x, g have a row per
 * local column (n_owned + n_halo), `cols` floats each; global ids fit in
 * int32. */

/* out[i, c] = max_j x[j, c] over the columns j of row i (0 for a row
 * without any), and, unless arg is NULL, arg[i, c] = the global id of the
 * j it came from, the lowest among equal values (-1 for an empty row);
 * out and arg are adj->rows × cols. */
void halo_cpu_sage_max(const halo_csr *adj, const int64_t *global_id, const float *x,
                       int64_t cols, float *out, int32_t *arg);

/* dx[j, c] (adj->rows × cols) = Σ g[i, c] over the columns i of row j
 * whose arg[i, c] is j's global id, added in the row's order. */
void halo_cpu_sage_max_backward(const halo_csr *adj, const int64_t *global_id, const int32_t *arg,
                                const float *g, int64_t cols, float *dx);

#endif /* HALO_KERNELS_H */
