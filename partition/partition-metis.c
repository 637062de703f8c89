/* METIS k-way (METIS_PartGraphKway): the default partitioner.
 *
 * METIS wants its own index type.  While it runs, the graph's int64 arrays
 * are replaced by idx_t copies and freed, so the process holds one copy of
 * the structure (at half the width on Debian's 32-bit idx_t) next to METIS'
 * coarsening workspace; the int64 arrays are rebuilt afterwards.
 */
#include <metis.h>
#include <stdlib.h>

#include "halo-partition.h"
#include "partition-impl.h"

/* The limits below are those of this idx_t. */
_Static_assert(IDXTYPEWIDTH == 8 * sizeof(idx_t), "metis.h: IDXTYPEWIDTH disagrees with idx_t");
_Static_assert(IDXTYPEWIDTH == 32 || IDXTYPEWIDTH == 64, "METIS idx_t must be 32 or 64 bits");

static const char *metis_error(int rc) {
  return rc == METIS_ERROR_INPUT    ? "input error"
         : rc == METIS_ERROR_MEMORY ? "out of memory"
                                    : "error";
}

/* idx_t copy of src[0..count); frees src and clears *src. */
static halo_status narrow(int64_t **src, int64_t count, idx_t **out, const char *what) {
  halo_status st = HALO_OK;
  idx_t *dst = NULL;
  HALO_ALLOC(dst, count, what);
  for (int64_t i = 0; i < count; i++) dst[i] = (idx_t)(*src)[i];
  free(*src);
  *src = NULL;
  *out = dst;
done:
  return st;
}

/* int64 copy of src[0..count) into *dst; frees src and clears *src. */
static halo_status widen(idx_t **src, int64_t count, int64_t **dst, const char *what) {
  halo_status st = HALO_OK;
  int64_t *wide = NULL;
  HALO_ALLOC(wide, count, what);
  for (int64_t i = 0; i < count; i++) wide[i] = (*src)[i];
  free(*src);
  *src = NULL;
  *dst = wide;
done:
  return st;
}

int64_t halo_partition_metis_seed_max(void) { return (int64_t)IDX_MAX; }

int64_t halo_partition_metis_limit(void) {
  const char *hook = getenv("HALO_TEST_METIS_LIMIT");
  char *end = NULL;
  long long lowered = hook ? strtoll(hook, &end, 10) : 0;
  if (hook && end != hook && *end == '\0' && lowered > 0 && lowered < (long long)IDX_MAX)
    return (int64_t)lowered;
  return (int64_t)IDX_MAX;
}

halo_status halo_partition_metis(halo_graph *g, const halo_partition_options *opt, int32_t *part) {
  halo_status st = HALO_OK;
  idx_t *xadj = NULL, *adjncy = NULL, *where = NULL, *vwgt = NULL;
  const int64_t n = g->n, m = g->m, limit = halo_partition_metis_limit();

  if (opt->parts < 1 || opt->parts > n)
    HALO_FAIL(HALO_ERR_ARG, "METIS: %d parts for %lld nodes; need 1 <= parts <= nodes", opt->parts,
              (long long)n);
  if (opt->parts == 1) {
    for (int64_t v = 0; v < n; v++) part[v] = 0;
    goto done;
  }
  if (n > limit || m > limit)
    HALO_FAIL(HALO_ERR_LIMIT,
              "%s: %lld nodes and %lld directed edges exceed METIS' limit of %lld (its %d-bit "
              "idx_t); the scotch method has no such limit",
              g->source, (long long)n, (long long)m, (long long)limit, IDXTYPEWIDTH);
  if (opt->seed < 0 || opt->seed > (int64_t)IDX_MAX)
    HALO_FAIL(HALO_ERR_ARG, "METIS seed %lld is outside [0, %lld]", (long long)opt->seed,
              (long long)IDX_MAX);
  if (opt->ufactor < 1) HALO_FAIL(HALO_ERR_ARG, "METIS: ufactor %d must be >= 1", opt->ufactor);

  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = (idx_t)opt->seed;
  options[METIS_OPTION_UFACTOR] = (idx_t)opt->ufactor;
  options[METIS_OPTION_OBJTYPE] =
      opt->objective == HALO_OBJECTIVE_VOL ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;

  /* --balance edges: two constraints a node, 1 (its node) and its degree (its
   * non-zeros), each held within ufactor; work: one, its step cost. */
  idx_t nvtxs = (idx_t)n, nparts = (idx_t)opt->parts, objval = 0;
  idx_t ncon = opt->balance == HALO_BALANCE_EDGES ? 2 : 1;
  if (opt->balance != HALO_BALANCE_NODES) {
    const int64_t row = opt->work_row_cost;
    const int64_t most = halo_partition_work(m, row); /* no node weighs more; METIS sums them */
    if (most > limit || (int64_t)ncon * n > limit || halo_partition_work(0, row) * n + m > limit)
      HALO_FAIL(HALO_ERR_LIMIT,
                "%s: the weights of --balance %s exceed METIS' limit of %lld (its %d-bit idx_t); "
                "the scotch method has no such limit",
                g->source, halo_balance_name(opt->balance), (long long)limit, IDXTYPEWIDTH);
    HALO_ALLOC(vwgt, (int64_t)ncon * n, "METIS vertex weights");
    for (int64_t v = 0; v < n; v++) {
      const int64_t degree = g->indptr[v + 1] - g->indptr[v];
      if (ncon == 2) {
        vwgt[2 * v] = 1;
        vwgt[2 * v + 1] = (idx_t)degree;
      } else {
        vwgt[v] = (idx_t)halo_partition_work(degree, row);
      }
    }
  }
  HALO_ALLOC(where, n, "METIS part vector");
  HALO_TRY(narrow(&g->indptr, n + 1, &xadj, "METIS xadj"));
  HALO_TRY(narrow(&g->indices, m, &adjncy, "METIS adjncy"));

  int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj, adjncy, vwgt, NULL, NULL, &nparts, NULL, NULL,
                               options, &objval, where);

  HALO_TRY(widen(&xadj, n + 1, &g->indptr, "graph offsets"));
  HALO_TRY(widen(&adjncy, m, &g->indices, "graph edges"));
  if (rc != METIS_OK)
    HALO_FAIL(HALO_ERR_METIS, "METIS_PartGraphKway failed on %s (%s)", g->source, metis_error(rc));
  for (int64_t v = 0; v < n; v++) {
    if (where[v] < 0 || where[v] >= nparts)
      HALO_FAIL(HALO_ERR_METIS, "METIS returned part %lld for node %lld (parts: %d)",
                (long long)where[v], (long long)v, opt->parts);
    part[v] = (int32_t)where[v];
  }

done:
  free(adjncy);
  free(xadj);
  free(where);
  free(vwgt);
  return st;
}
