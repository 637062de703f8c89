/* The partitioner: graph clean-up, partitioning, halo plans, statistics and
 * the output folder that halo-train reads.
 *
 *   halo_graph ─clean─▶ simple symmetric CSR ─partitioner─▶ part[] (size n)
 *              ─plan─▶ one halo_shard per part ─▶ DIR/part-*.h5 + DIR/manifest.h5
 *
 * Every partitioner has the type halo_partitioner and fills part[v] in
 * [0, parts) for every node v.  METIS k-way is the default; random and
 * contiguous block exist to compare against.  Every function here is Local
 * (no MPI) and logs its own failures once.
 */
#ifndef HALO_PARTITION_H
#define HALO_PARTITION_H

#include <stddef.h> /* halo-shard.h uses size_t */
#include <stdint.h>
#include <stdio.h>

#include "halo-graph.h"
#include "halo-shard.h"
#include "halo-status.h"

/* ---- clean-up -------------------------------------------------------- */

/* What halo_partition_clean changed. */
typedef struct halo_clean_report {
  int64_t input_edges;   /* stored edges before clean-up */
  int64_t self_loops;    /* self-loops removed */
  int64_t duplicates;    /* repeated (u, v) entries removed */
  int64_t reverse_added; /* (v, u) entries added because only (u, v) was present */
  int64_t isolated;      /* nodes with no edge left (they are kept) */
} halo_clean_report;

/* Makes g simple and symmetric, in place: E' = {(u,v), (v,u) : (u,v) ∈ E, u ≠ v}.
 * Rows end sorted ascending; node count, ids and node data are unchanged, and
 * isolated nodes stay.  Extra memory: O(n) when the input is already simple
 * and symmetric (no second edge array), otherwise also the added edges.
 * `report` may be NULL.
 * Fails with HALO_ERR_RANGE (naming g->source) on an edge outside [0, n);
 * after any failure g may only be destroyed. Local. */
halo_status halo_partition_clean(halo_graph *g, halo_clean_report *report);

/* ---- partitioners ---------------------------------------------------- */

typedef enum {
  HALO_METHOD_METIS = 0,
  HALO_METHOD_RANDOM,
  HALO_METHOD_BLOCK,
  HALO_METHOD_SCOTCH,
  HALO_METHOD_PTSCOTCH /* distributed (halo-dpartition.h): no halo_partitioner */
} halo_method;
typedef enum { HALO_OBJECTIVE_CUT = 0, HALO_OBJECTIVE_VOL } halo_objective;

/* How a shard numbers its owned rows (halo rows are the same either way).
 * COMMUNITY: rows with no neighbour in another part ("interior") first, then
 * the boundary rows; within each group, block by block, where the blocks are
 * grown greedily in the part's induced subgraph (each of at most
 * HALO_PARTITION_BLOCK_ROWS rows and, but for the last, at least half that;
 * O(rows + edges), deterministic), and ascending global id inside a block.
 * Neighbours then sit close together, so the rows of X an SpMM gathers come
 * from cache, and the interior rows are a prefix [0, n_interior) of the local
 * CSR.  ID: ascending global id (format 1's only order). */
typedef enum { HALO_ORDER_COMMUNITY = 0, HALO_ORDER_ID } halo_order;

/* Rows per locality block, at most.  At width 64 (float) the X rows of one block take
 * 1000 · 256 B = 256 KB, half of a 512 KB L2, so a block's inner gathers
 * stay in L2 at the widths the trainer uses (16 to 64); smaller blocks cut
 * more of a community's edges.  Measured in docs/benchmarks.md ("SpMM vs
 * STREAM"): 1000 against 250 and 4000 on the 1M-node SBM.  A build may set
 * it (-DHALO_PARTITION_BLOCK_ROWS=N) to measure another size. */
#ifndef HALO_PARTITION_BLOCK_ROWS
#define HALO_PARTITION_BLOCK_ROWS 1000
#endif

/* How the shards store node features (--features-layout): AUTO by the
 * density rule over the whole graph (halo_csr_is_smaller, core/halo-csr.h:
 * CSR while 8·nnz + 8·n < 4·F·n), SPARSE always CSR (format 3), DENSE
 * always the n_owned x F /features of format 2. */
typedef enum {
  HALO_FEATURES_AUTO = 0,
  HALO_FEATURES_SPARSE,
  HALO_FEATURES_DENSE
} halo_features_layout;

/* What the parts balance (--balance).  NODES: owned nodes (the default, and
 * the parts halo wrote before the flag).  EDGES: owned nodes and the local
 * CSR's non-zeros together (METIS: two constraints, ncon = 2; Scotch and
 * PT-Scotch, which balance one load, a combined load per node of
 * halo_partition_load).  WORK: the predicted step cost of a part, Σ over its
 * owned nodes of halo_partition_work (its edges plus the row cost,
 * --work-row-cost), one constraint for every method. */
typedef enum { HALO_BALANCE_NODES = 0, HALO_BALANCE_EDGES, HALO_BALANCE_WORK } halo_balance;

/* The default cost of a row in the step model, counted in non-zeros: a
 * node of degree d costs d + row_cost.  The sparse products gather one row
 * of width h per non-zero; the dense work of a row (its GEMM row,
 * activation, dropout, loss and optimiser) runs at several times the
 * throughput of a gather, and was put at about 4 gathered rows at the
 * trainer's widths.  The model's own widths move it: bench/balance-step.sh
 * fits it from the ranks' measured work, and --work-row-cost sets it
 * (docs/partition.md, "Balance"). */
#define HALO_PARTITION_WORK_ROW_COST 4

/* The predicted step cost of a node of `degree` edges. Local. */
static inline int64_t halo_partition_work(int64_t degree, int64_t row_cost) {
  return degree + row_cost;
}

/* The single load a node of `degree` edges gets under `balance` from a
 * partitioner that balances one load (Scotch, PT-Scotch): 1 for NODES;
 * for EDGES degree + mean_degree (a part's load is then its non-zeros plus
 * its nodes times the mean degree: both constraints at equal weight, in
 * non-zeros); for WORK halo_partition_work with row_cost.  mean_degree is
 * round(edges / nodes), at least 1. Local. */
static inline int64_t halo_partition_load(halo_balance balance, int64_t degree, int64_t mean_degree,
                                          int64_t row_cost) {
  return balance == HALO_BALANCE_NODES   ? 1
         : balance == HALO_BALANCE_EDGES ? degree + mean_degree
                                         : halo_partition_work(degree, row_cost);
}

/* round(edges / nodes), at least 1: the mean degree halo_partition_load takes. */
static inline int64_t halo_partition_mean_degree(int64_t nodes, int64_t edges) {
  int64_t d = nodes > 0 ? (edges + nodes / 2) / nodes : 1;
  return d > 0 ? d : 1;
}

typedef struct halo_partition_options {
  int32_t parts; /* P >= 1 */
  halo_method method;
  halo_objective objective; /* METIS: minimise edge cut or communication volume; Scotch: cut */
  int64_t seed;             /* METIS_OPTION_SEED, Scotch's random seed, the random permutation */
  int32_t ufactor;          /* METIS and Scotch: allowed imbalance 1 + ufactor/1000 */
  halo_order order;         /* local numbering of each shard's owned rows */
  int32_t levels;           /* ptscotch: at most this many levels of halo's distributed
                               coarsening before PT-Scotch (0: PT-Scotch's own alone) */
  halo_features_layout features_layout; /* the shards' feature layout */
  halo_balance balance;                 /* what the parts balance (NODES: 0, the default) */
  int32_t work_row_cost; /* a row's cost in the step model, in non-zeros (--work-row-cost) */
} halo_partition_options;

/* The most levels of halo's coarsening before PT-Scotch, and the default. */
#define HALO_PTSCOTCH_LEVELS_MAX 16
#define HALO_PTSCOTCH_LEVELS_DEFAULT 8

/* The defaults of halo-partition: METIS k-way, edge cut, seed 1, ufactor 30
 * (METIS' own k-way default), community order. */
#define HALO_PARTITION_OPTIONS_INIT                                                       \
  {                                                                                       \
    .parts = 1, .method = HALO_METHOD_METIS, .objective = HALO_OBJECTIVE_CUT, .seed = 1,  \
    .ufactor = 30, .order = HALO_ORDER_COMMUNITY, .levels = HALO_PTSCOTCH_LEVELS_DEFAULT, \
    .work_row_cost = HALO_PARTITION_WORK_ROW_COST                                         \
  }

/* Fills part[0..g->n) with values in [0, opt->parts).  g must be clean
 * (halo_partition_clean).  A partitioner may release g's structure arrays
 * while it runs to keep peak memory low; on success they hold the same values
 * as before (possibly at new addresses), after a failure g may only be
 * destroyed. Local. */
typedef halo_status (*halo_partitioner)(halo_graph *g, const halo_partition_options *opt,
                                        int32_t *part);

/* METIS_PartGraphKway with opt's seed, ufactor and objective.  Graphs beyond
 * METIS' limit (n or edges > halo_partition_metis_limit()) fail with
 * HALO_ERR_LIMIT; P == 1 does not call METIS. */
halo_status halo_partition_metis(halo_graph *g, const halo_partition_options *opt, int32_t *part);

/* The most nodes and directed edges METIS takes: IDX_MAX of its idx_t
 * (2^31 - 1 with Debian's 32-bit indices).  A test hook lowers it: the
 * environment variable HALO_TEST_METIS_LIMIT, when it holds a smaller
 * positive integer, is the limit instead, so that CI exercises what happens
 * past it on small graphs. Local. */
int64_t halo_partition_metis_limit(void);

/* Scotch k-way (SCOTCH_graphPart of the int64 library) with opt's seed and
 * ufactor, reproducibly (Scotch's deterministic option and a fixed random
 * state); the edge-cut objective only (HALO_ERR_ARG for vol).  It has no
 * 32-bit limit and reads g's arrays in place.  Fails with HALO_ERR_SCOTCH,
 * with Scotch's reason, when Scotch does; P == 1 does not call Scotch. */
halo_status halo_partition_scotch(halo_graph *g, const halo_partition_options *opt, int32_t *part);

/* The largest seed METIS takes: IDX_MAX of its idx_t (2^31 - 1 with 32-bit
 * indices); halo_partition_metis refuses larger ones. Local. */
int64_t halo_partition_metis_seed_max(void);

/* A seeded uniform random permutation cut into P blocks of n/P nodes (sizes
 * differ by at most one): balanced, locality-blind. */
halo_status halo_partition_random(halo_graph *g, const halo_partition_options *opt, int32_t *part);

/* Contiguous id ranges of n/P nodes (sizes differ by at most one). */
halo_status halo_partition_block(halo_graph *g, const halo_partition_options *opt, int32_t *part);

/* The partitioner of a method; NULL for ptscotch, which is collective
 * (halo_partition_ptscotch in halo-dpartition.h), and for an invalid value. */
halo_partitioner halo_partition_lookup(halo_method method);

/* "metis" | "random" | "block" | "scotch" | "ptscotch", "cut" | "vol" and "community" | "id";
 * HALO_ERR_ARG otherwise (the caller names the flag). The _name functions
 * return static strings. */
halo_status halo_method_parse(const char *name, halo_method *out);
halo_status halo_objective_parse(const char *name, halo_objective *out);
halo_status halo_order_parse(const char *name, halo_order *out);
/* "nodes" | "edges" | "work"; HALO_ERR_ARG otherwise. */
halo_status halo_balance_parse(const char *name, halo_balance *out);
const char *halo_balance_name(halo_balance balance);
const char *halo_method_name(halo_method method);
const char *halo_objective_name(halo_objective objective);
const char *halo_order_name(halo_order order);
/* "auto" | "sparse" | "dense"; HALO_ERR_ARG otherwise. */
halo_status halo_features_layout_parse(const char *name, halo_features_layout *out);

/* Whether a run stores CSR features: layout SPARSE, or AUTO and the rule
 * holds for n rows of F features with nnz non-zeros; never without features.
 * Local. */
int halo_features_csr_wanted(halo_features_layout layout, int64_t n, int32_t features, int64_t nnz);

/* Converts g's features to the layout the run writes (halo_features_csr_wanted
 * over the whole graph), so that every shard of the run has it. Local. */
halo_status halo_partition_features_layout(halo_graph *g, halo_features_layout layout);

/* Block b of n items cut into P near-equal blocks: the first n % P blocks
 * hold n/P + 1 items, the rest n/P.  Returns the block of item i. */
int32_t halo_partition_block_of(int64_t i, int64_t n, int32_t parts);

/* Consecutive items cut into `blocks` blocks of about equal load: an item
 * goes to block floor(blocks x (the load of the items before it) / total),
 * so no block holds more than its share and one item.  Given a run of
 * `count` items (load[0..count)) after items of load `below`, first[q]
 * (q in [0, blocks]) gets the index in the run of its first item of block q
 * or higher, or INT64_MAX where the run has none: over runs held by several
 * ranks, the least of the runs' (offset to global ids) is the cut. Local. */
void halo_partition_cut_by_load(const int64_t *load, int64_t count, int64_t below, int64_t total,
                                int blocks, int64_t *first);

/* ---- statistics ------------------------------------------------------ */

/* The most parts for which the statistics keep the P x P matrix of halo
 * rows between parts (halo_partition_stats.between): 1024 parts give 8 MB
 * of counts and about 8 MB of JSON (halo-partition --json). */
#define HALO_PARTITION_MATRIX_MAX_PARTS 1024

/* Per-part and global figures of a partition of a clean graph. */
typedef struct halo_partition_stats {
  int64_t nodes, edges; /* n and directed edges of the clean graph */
  int32_t parts;
  int64_t edge_cut;          /* undirected edges whose ends lie in different parts */
  int64_t comm_volume;       /* H = Σ_p halo[p]: rows received per exchange, all parts */
  int64_t *owned;            /* size parts: nodes owned by p */
  int64_t *halo;             /* size parts: remote neighbours of p's owned nodes */
  int64_t *nnz;              /* size parts: local CSR entries (edges leaving p's owned rows) */
  int64_t *send;             /* size parts: rows p sends per exchange (Σ_p send = H) */
  int32_t *peers;            /* size parts: parts p receives from */
  int64_t *cost;             /* size parts: predicted step cost, Σ halo_partition_work over
                              * p's owned nodes (= nnz[p] + work_row_cost · owned[p]) */
  int64_t work_row_cost;     /* the row cost of cost[] (HALO_PARTITION_WORK_ROW_COST unless
                              * the caller sets it before halo_partition_stats_finish) */
  int64_t *between;          /* size parts*parts: [q*parts + p] = halo rows of part p owned by
                              * part q, the rows q sends p per exchange (diagonal 0; row q sums
                              * to send[q], column p to halo[p]); NULL when parts >
                              * HALO_PARTITION_MATRIX_MAX_PARTS */
  int32_t groupings;         /* entries of by_ranks / by_ranks_rows; 0 when not computed */
  int32_t by_ranks[32];      /* P = parts, then halved (rounding up) down to 1 */
  int64_t by_ranks_rows[32]; /* halo rows per exchange when the parts train on by_ranks[i]
                              * ranks, grouped as halo-train groups them (halo_shard_group) */
  /* halo_partition_stats_cover (halo-train --halo-aggregate auto): the rows
   * one exchange moves when each pair's cut crosses as a minimum vertex
   * cover, and its matrix as `between`; cover_volume -1 and cover_between
   * NULL until computed. */
  int64_t cover_volume;
  int64_t *cover_between;
  double replication_factor; /* (n + H) / n: rows stored over all parts per node */
  double balance;            /* max owned / mean owned */
  double balance_nnz;        /* max / mean of nnz[] (1 when the graph has no edge) */
  double balance_halo;       /* max / mean of halo[] (1 when there is no halo row) */
  double balance_send;       /* max / mean of send[] (1 when nothing is sent) */
  double balance_cost;       /* max / mean of cost[] */
} halo_partition_stats;

/* One pass over the clean graph g. On success *out owns new statistics. Local. */
halo_status halo_partition_stats_create(const halo_graph *g, const int32_t *part, int32_t parts,
                                        halo_partition_stats **out);
void halo_partition_stats_destroy(halo_partition_stats **s);

/* Fills s->by_ranks and s->by_ranks_rows from the clean graph g and its
 * partition part[] (size g->n), with s->owned and s->between complete: for
 * each P, the parts grouped as halo-train groups them on P ranks, and the
 * distinct (row, receiving group) pairs of the grouped exchange. Local. */
halo_status halo_partition_stats_by_ranks(halo_partition_stats *s, const halo_graph *g,
                                          const int32_t *part);
/* Sets s->cover_volume = Σ over ordered pairs (q, p) of the size of a
 * minimum vertex cover of the bipartite graph of the cut edges between p
 * and q (core/halo-cover.h), the rows q sends p under --halo-aggregate auto,
 * and s->cover_between like s->between (when that is kept).  The size is
 * the maximum matching's, whatever cover halo-train picks, so this is its
 * byte count exactly. Local. */
halo_status halo_partition_stats_cover(const halo_graph *g, const int32_t *part,
                                       halo_partition_stats *s);

/* Statistics read off shards as they are written, part by part: alloc
 * (zeroed per-part arrays), add each part's shard (edge_cut collects the
 * directed cut edges meanwhile), then finish (halves the cut, totals and
 * ratios).  Every field is a sum over the parts added, so writers that
 * each add some parts may sum their figures before one of them finishes.
 * Local. */
halo_status halo_partition_stats_alloc(int64_t nodes, int64_t edges, int32_t parts,
                                       halo_partition_stats **out);
void halo_partition_stats_add_shard(halo_partition_stats *s, const halo_shard *shard);
void halo_partition_stats_finish(halo_partition_stats *s);

/* ---- halo plans ------------------------------------------------------ */

/* Builds the shards of a partition one part at a time, reusing O(n) scratch
 * so that only one part's arrays exist at once.  Borrows g and part, which
 * must outlive the plan.  `order` numbers the owned rows (halo_order). */
typedef struct halo_partition_plan halo_partition_plan;

halo_status halo_partition_plan_create(const halo_graph *g, const int32_t *part, int32_t parts,
                                       halo_order order, uint64_t run_id,
                                       halo_partition_plan **out);
/* (parts may exceed g->n: a local graph of one part's rows has fewer nodes.) */

/* Fills a new shard for part p exactly as halo-shard.h describes it: owned
 * rows in the plan's order (n_interior: the leading rows with no halo
 * neighbour), then halo rows grouped by owner part and ascending global id;
 * send lists in ascending global id, so that peer q's list for p matches p's
 * halo range from q; local CSR with int32 columns; features, labels and split
 * of the owned rows, and their ids in the input (original_id[global_id[r]])
 * when g->original_id is set.  The same graph, part[] and order always give the same
 * shard.  Scratch beyond the shard: O(owned rows + their edges) for the
 * blocks of HALO_ORDER_COMMUNITY.  On success *out owns it (free with
 * halo_shard_destroy). Local. */
halo_status halo_partition_plan_shard(halo_partition_plan *plan, int32_t p, halo_shard **out);

void halo_partition_plan_destroy(halo_partition_plan **plan);

/* One part as the process that writes it holds it, without the rest of the
 * graph (the distributed partitioner): its owned nodes in ascending global
 * id, each one's neighbours in ascending id with their parts and degrees,
 * and the owned rows' node data. */
typedef struct halo_part_rows {
  int32_t part, parts;
  int64_t nodes, edges; /* n and directed edges of the whole clean graph */
  int64_t n_owned;
  const int64_t *id;          /* size n_owned, ascending */
  const int64_t *indptr;      /* size n_owned + 1, from 0 */
  const int64_t *nbr;         /* size indptr[n_owned]: each row's neighbours, ascending */
  const int32_t *nbr_part;    /* the part of each neighbour */
  const int64_t *nbr_degree;  /* the degree of each neighbour in the clean graph */
  int32_t features, classes;  /* as halo_graph */
  const float *x;             /* n_owned x features, or NULL */
  const int64_t *x_indptr;    /* the features as CSR instead of x: size n_owned + 1, from 0;
                               * or NULL.  The shard's features are then CSR (format 3) */
  const int32_t *x_indices;   /* size x_indptr[n_owned], ascending in each row */
  const float *x_values;      /* size x_indptr[n_owned] */
  const int32_t *labels;      /* n_owned, or NULL */
  const int8_t *targets;      /* multi-label: n_owned x classes tasks (1, 0, -1 missing), or
                               * NULL */
  const uint8_t *split;       /* n_owned, or NULL */
  const int64_t *original_id; /* n_owned: each row's id in the input, or NULL (as
                               * halo_graph.original_id) */
} halo_part_rows;

/* The shard halo_partition_plan_shard makes for this part from the whole
 * graph, made from its rows alone: the same datasets, byte for byte, since
 * every order the plan uses is by global id.  Scratch: a local graph of the
 * part's owned and halo rows. Local. */
halo_status halo_partition_shard_of_rows(const halo_part_rows *rows, halo_order order,
                                         uint64_t run_id, halo_shard **out);

/* ---- output ---------------------------------------------------------- */

/* The identity of a run: a digest of what was read (g->source_digest, which
 * the loaders also fold node-data files into), the counts of the clean graph
 * (nodes, edges, features, classes: synthetic node data is a function of
 * them and the seed), the options (the row order included) and part[], so
 * that a rerun with the same inputs gives the same id and a different run a
 * different one.  opt->features_layout is the run's resolved layout (SPARSE or
 * DENSE, not AUTO), which picks the format version it digests. Local. */
uint64_t halo_partition_run_id(const halo_graph *g, const halo_partition_options *opt,
                               const int32_t *part);

/* An output folder that appears only when complete: files go to
 * DIR.tmp.<pid> and halo_outdir_commit renames it to DIR. */
typedef struct halo_outdir halo_outdir;

/* Creates DIR.tmp.<pid>.  Fails with HALO_ERR_EXISTS when DIR exists and
 * `force` is 0, and with HALO_ERR_ARG when DIR exists but holds files that
 * halo-partition does not write (it never deletes foreign files), or when the
 * parent folder is missing or not writable. Local. */
halo_status halo_outdir_open(const char *dir, int force, halo_outdir **out);

/* The temporary folder files go to until commit. */
const char *halo_outdir_tmp(const halo_outdir *o);

/* Renames the temporary folder to DIR, replacing an old DIR (force) only now
 * that the new one is complete. Local. */
halo_status halo_outdir_commit(halo_outdir *o);

/* Removes the temporary folder unless committed; accepts NULL, sets *o = NULL. */
void halo_outdir_close(halo_outdir **o);

/* An output file that appears only when complete: it is written as
 * FILE.tmp.XXXXXX in FILE's folder, flushed to disk by halo_outfile_commit
 * and renamed over FILE.  Until then an old FILE is untouched, and after a
 * failure only the temporary is removed: a device, a folder or anything else
 * that is not a regular file is never written through, replaced or deleted
 * (as root, writing /dev/full and deleting it on the error once removed the
 * device node). */
typedef struct halo_outfile halo_outfile;

/* Creates the temporary file.  `flag` ("--json"; NULL for none) starts every
 * message.  Fails with HALO_ERR_EXISTS when FILE exists and is not a regular
 * file, or is one and `force` is 0; with HALO_ERR_IO when the temporary
 * cannot be created (a missing or read-only folder). Local. */
halo_status halo_outfile_open(const char *path, const char *flag, int force, halo_outfile **out);

/* The stream to write into; errors show at commit. */
FILE *halo_outfile_stream(const halo_outfile *f);

/* "--json FILE" or "FILE", for messages. */
const char *halo_outfile_name(const halo_outfile *f);

/* The temporary's path (FILE.tmp.XXXXXX), for writers other than the
 * stream: the ranks of a distributed run write into it by MPI-IO. */
const char *halo_outfile_tmp(const halo_outfile *f);

/* Flushes and fsyncs the temporary, then renames it to FILE.  On failure the
 * temporary is removed and FILE is as it was. Local. */
halo_status halo_outfile_commit(halo_outfile *f);

/* Removes the temporary unless committed; accepts NULL, sets *f = NULL. */
void halo_outfile_close(halo_outfile **f);

/* ---- stopping on SIGINT and SIGTERM ---------------------------------- */

/* Blocks SIGINT and SIGTERM in the calling thread, and hence in every thread
 * started after it (call it first in main, before any thread exists), and
 * starts a thread that waits for them.  When one arrives, that thread removes
 * every temporary path registered with halo_cleanup_add, writes one line
 * "NAME: stopped by SIGTERM; removed A and B" to stderr and ends the process
 * with status 128 + signal.  No handler runs, so METIS' own SIGTERM handler
 * (gk_sigtrap) never sees the signal either.  A signal ignored at start (as
 * SIGINT is for `cmd &` in a script) stays ignored. Local. */
halo_status halo_cleanup_on_signals(const char *name);

/* Registers `path` (copied) for removal on a signal: a folder of plain files
 * (`is_dir`) or one file.  halo_outdir and halo_outfile register their
 * temporaries themselves.  At most 8 paths at once. Local. */
halo_status halo_cleanup_add(const char *path, int is_dir);

/* Forgets `path` (nothing is removed). Local. */
void halo_cleanup_drop(const char *path);

/* A recursive lock around the registry: a path must be created or renamed and
 * (un)registered in one critical section, so that a signal in between cannot
 * miss it.  main takes it before it returns, so that a run that has finished
 * is not cleaned up half-way by a late signal. Local. */
void halo_cleanup_lock(void);
void halo_cleanup_unlock(void);

/* Called after each part is written (done of total). */
typedef void (*halo_progress_fn)(void *ctx, int64_t done, int64_t total);

/* Writes every part's shard and the manifest into folder `dir` (the
 * temporary folder of an outdir), planning part p+1 on a second thread while
 * part p is written, so that at most two parts exist at once.  When `stats` is not
 * NULL, *stats receives the partition statistics read off the shards as they
 * are written (the same figures as halo_partition_stats_create, without
 * another pass over the graph). Local. */
halo_status halo_partition_write(const char *dir, const halo_graph *g, const int32_t *part,
                                 const halo_partition_options *opt, uint64_t run_id,
                                 halo_progress_fn progress, void *progress_ctx,
                                 halo_partition_stats **stats);

/* Writes the clean graph g in METIS' graph format (header "n edges", then
 * one line of 1-based neighbours per node), for gpmetis, into `f` and
 * commits it. Local. */
halo_status halo_partition_write_metis_to(const halo_graph *g, halo_outfile *f);

/* The same into file `path` (a halo_outfile: replaced only when complete,
 * an existing regular file is replaced, anything else refused). Local. */
halo_status halo_partition_write_metis(const halo_graph *g, const char *path);

#endif /* HALO_PARTITION_H */
