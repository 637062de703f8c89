/* OGB raw dataset folders.
 *
 *   num-node-list.csv[.gz]   the node count n (one line)
 *   edge.csv[.gz]            "src,dst" per line, ids in [0, n)
 *   node-feat.csv[.gz]       optional: one comma-separated row per node
 *   node-label.csv[.gz]      optional: one label per line, "nan" = unlabelled
 *   split/{train,valid,test}.csv[.gz], or split/<name>/... when split/ holds
 *                            exactly one folder, as in OGB downloads
 *   num-edge-list.csv[.gz]   optional: sizes the edge buffer up front
 *
 * A downloaded dataset keeps these files in raw/ next to split/; pointing at
 * the dataset's top folder or at its raw/ folder both work.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "halo-rng.h"
#include "load-impl.h"

enum { OGB_PATH = HALO_OGB_PATH };

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* Joins dir/name; an over-long path is an error naming it. */
static halo_status join(char out[OGB_PATH], const char *dir, const char *name) {
  halo_status st = HALO_OK;
  if (snprintf(out, OGB_PATH, "%s/%s", dir, name) >= OGB_PATH)
    HALO_FAIL(HALO_ERR_ARG, "%s/%s: path too long", dir, name);
done:
  return st;
}

/* Finds dir/NAME.csv.gz or dir/NAME.csv; returns 1 when one exists. */
static halo_status find_csv(char out[OGB_PATH], const char *dir, const char *name, int *found) {
  halo_status st = HALO_OK;
  char base[OGB_PATH];
  HALO_TRY(join(base, dir, name));
  *found = 0;
  static const char *const SUFFIX[2] = {".csv.gz", ".csv"};
  for (int k = 0; k < 2 && !*found; k++) {
    if (snprintf(out, OGB_PATH, "%s%s", base, SUFFIX[k]) >= OGB_PATH)
      HALO_FAIL(HALO_ERR_ARG, "%s%s: path too long", base, SUFFIX[k]);
    *found = is_file(out);
  }
done:
  return st;
}

/* Reads the single number of a count file (num-node-list, num-edge-list). */
static halo_status read_count(const char *path, halo_digest_chunked *digest, int64_t *count) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  HALO_TRY(load_reader_open(&r, path, digest));
  char *line;
  size_t len;
  int got;
  int lines = 0;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    const char *p = load_skip_blank(line);
    if (*p == '\0') continue;
    if (++lines > 1)
      LOAD_FAIL(&r, HALO_ERR_UNSUPPORTED,
                "more than one count: heterogeneous OGB graphs are not supported");
    const char *tok = p;
    int rc = load_scan_i64(&p, count);
    if (rc != LOAD_SCAN_OK || *load_skip_blank(p) != '\0') LOAD_FAIL_TOKEN(&r, tok, "a count");
    if (*count < 0) LOAD_FAIL(&r, HALO_ERR_RANGE, "count %lld is negative", (long long)*count);
  }
  if (got < 0) HALO_TRY(got);
  if (lines == 0) LOAD_FAIL(&r, HALO_ERR_PARSE, "no count in the file");
  HALO_TRY(load_reader_close(&r));
done:
  load_reader_close(&r);
  return st;
}

halo_status load_ogb_edge(const load_reader *r, const char *line, int64_t n, int64_t id[2]) {
  halo_status st = HALO_OK;
  const char *p = line;
  for (int c = 0; c < 2; c++) {
    p = load_skip_blank(p);
    const char *tok = p;
    int rc = load_scan_i64(&p, &id[c]);
    if (rc == LOAD_SCAN_BAD) LOAD_FAIL_TOKEN(r, tok, "a node id");
    if (rc == LOAD_SCAN_RANGE || id[c] < 0 || id[c] >= n)
      LOAD_FAIL(r, HALO_ERR_RANGE, "node id %.*s is out of range [0, %lld) (num-node-list)",
                (int)(p - tok), tok, (long long)n);
    p = load_skip_blank(p);
    if (c == 0 && *p == ',') {
      p++;
    } else if (*p != '\0' || c == 0) {
      int cols = 1;
      for (const char *q = line; *q; q++) cols += *q == ',';
      if (c == 1 && cols == 2)
        LOAD_FAIL(r, HALO_ERR_PARSE, "unexpected text '%.20s' after 'src,dst'", p);
      LOAD_FAIL(r, HALO_ERR_PARSE, "expected 2 columns 'src,dst', found %d", cols);
    }
  }
done:
  return st;
}

/* An empty edge.csv is a graph of n isolated nodes (docs/partition.md,
 * "Graphs without edges"): num-node-list gives the nodes. */
static halo_status read_edges(const char *path, int64_t n, halo_digest_chunked *digest, load_edges *edges) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  HALO_TRY(load_reader_open_maybe_empty(&r, path, digest));
  char *line;
  size_t len;
  int got;
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    int64_t id[2];
    HALO_TRY(load_ogb_edge(&r, line, n, id));
    HALO_TRY(load_edges_push(edges, id[0], id[1]));
  }
  if (got < 0) HALO_TRY(got);
  HALO_TRY(load_reader_close(&r));
done:
  load_reader_close(&r);
  return st;
}

/* The width of edge-feat.csv[.gz]: the values on its first line (0 when
 * the file is empty). */
static halo_status edge_feat_width(const char *path, int32_t *width) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  char *line;
  size_t len;
  *width = 0;
  HALO_TRY(load_reader_open_maybe_empty(&r, path, NULL));
  int got = load_reader_next(&r, &line, &len);
  if (got < 0) HALO_TRY(got);
  if (got > 0) *width = load_text_fields(line, ',');
done:
  load_reader_close(&r);
  return st;
}

/* edge-feat.csv[.gz] of width 1: one weight a line, line k for edge k of
 * edge.csv (m edges), each checked by load_check_weight. */
static halo_status read_edge_weights(const char *path, int64_t m, halo_digest_chunked *digest,
                                     load_weights *w) {
  halo_status st = HALO_OK;
  load_reader r = {0};
  char *line;
  size_t len;
  int got;
  HALO_TRY(load_reader_open_maybe_empty(&r, path, digest));
  while ((got = load_reader_next(&r, &line, &len)) > 0) {
    const char *p = load_skip_blank(line), *tok = p;
    float value = 0.0f;
    if (load_scan_f32(&p, &value) != LOAD_SCAN_OK || *load_skip_blank(p) != '\0')
      LOAD_FAIL_TOKEN(&r, tok, "an edge weight (edge-feat of width 1)");
    if (w->count == m)
      LOAD_FAIL(&r, HALO_ERR_FORMAT, "more edge weights than the %lld edges of edge.csv",
                (long long)m);
    char where[OGB_PATH + 32];
    snprintf(where, sizeof where, "%s:%lld", path, (long long)r.line);
    if (load_check_weight(where, value, tok) < 0) {
      st = HALO_ERR_RANGE;
      goto done;
    }
    HALO_TRY(load_weights_push(w, value));
  }
  if (got < 0) HALO_TRY(got);
  if (w->count != m)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: %lld edge weights for the %lld edges of edge.csv", path,
              (long long)w->count, (long long)m);
done:
  load_reader_close(&r);
  return st;
}

/* The three split files of folder `dir`; all must exist. */
static halo_status split_files_in(const char *dir, char paths[3][OGB_PATH]) {
  halo_status st = HALO_OK;
  static const char *const NAMES[3] = {"train", "valid", "test"};
  int found = 0;
  for (int s = 0; s < 3; s++) {
    HALO_TRY(find_csv(paths[s], dir, NAMES[s], &found));
    if (!found)
      HALO_FAIL(HALO_ERR_IO, "%s/%s.csv[.gz]: missing (the split needs train, valid and test)",
                dir, NAMES[s]);
  }
done:
  return st;
}

/* Resolves the three split files, or none when there is no split folder:
 * split/ itself, or its folder `name`, or its only folder when `name` is
 * NULL.  Several folders and no name are refused with their names. */
halo_status load_ogb_find_splits(const char *data_dir, const char *top_dir, const char *name,
                               char paths[3][OGB_PATH], int *have) {
  halo_status st = HALO_OK;
  DIR *d = NULL;
  char split_dir[OGB_PATH], names[1024] = "";
  size_t used = 0;
  *have = 0;
  HALO_TRY(join(split_dir, data_dir, "split"));
  if (!is_dir(split_dir) && top_dir) HALO_TRY(join(split_dir, top_dir, "split"));
  if (!is_dir(split_dir)) {
    if (name)
      HALO_FAIL(HALO_ERR_ARG, "--split-name %s: %s has no split/ folder", name,
                top_dir ? top_dir : data_dir);
    goto done;
  }

  int found = 0;
  HALO_TRY(find_csv(paths[0], split_dir, "train", &found));
  if (found && name)
    HALO_FAIL(HALO_ERR_ARG, "--split-name %s: %s holds one split (train.csv), not named ones",
              name, split_dir);
  if (!found) {
    /* OGB keeps each split scheme in its own folder (split/time/, split/sales_ranking/). */
    d = opendir(split_dir);
    if (!d) HALO_FAIL(HALO_ERR_IO, "%s: cannot list: %s", split_dir, strerror(errno));
    char sub[OGB_PATH] = "";
    int folders = 0, named = 0;
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[OGB_PATH];
      HALO_TRY(join(path, split_dir, e->d_name));
      if (!is_dir(path)) continue;
      folders++;
      if (used < sizeof names)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                                 e->d_name);
      if (!name || strcmp(name, e->d_name) == 0) {
        named += name != NULL;
        memcpy(sub, path, sizeof sub);
      }
    }
    if (name && !named)
      HALO_FAIL(HALO_ERR_ARG, "--split-name %s: %s has no such split (it has: %s)", name,
                split_dir, folders ? names : "none");
    if (!name && folders > 1)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: holds %d split schemes (%s); pick one with --split-name NAME",
                split_dir, folders, names);
    if (folders == 0)
      HALO_FAIL(HALO_ERR_FORMAT, "%s: expected train.csv[.gz] or a split folder, found neither",
                split_dir);
    memcpy(split_dir, sub, sizeof split_dir);
  }
  HALO_TRY(split_files_in(split_dir, paths));
  *have = 1;
done:
  if (d) closedir(d);
  return st;
}

halo_status halo_load_split_paths(const char *dir, char paths[3][HALO_OGB_PATH]) {
  halo_status st = HALO_OK;
  if (!is_dir(dir)) HALO_FAIL(HALO_ERR_ARG, "--split %s: not a folder", dir);
  HALO_TRY(split_files_in(dir, paths));
done:
  return st;
}

halo_status halo_load_split(halo_graph *g, const char *dir) {
  halo_status st = HALO_OK;
  char paths[3][OGB_PATH];
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  if (!is_dir(dir)) HALO_FAIL(HALO_ERR_ARG, "--split %s: not a folder", dir);
  HALO_TRY(split_files_in(dir, paths));
  const char *const files[3] = {paths[0], paths[1], paths[2]};
  HALO_TRY(load_split_files(g, files, &digest));
  g->source_digest = halo_rng_mix(g->source_digest ^ halo_digest_chunked_final(&digest));
done:
  return st;
}

halo_status halo_load_ogb_files(const char *dir, const halo_load_options *opt,
                                halo_ogb_files *out) {
  halo_status st = HALO_OK;
  char data_dir[OGB_PATH], parent_dir[OGB_PATH];
  const char *top_dir = NULL;
  int found = 0;
  *out = (halo_ogb_files){0};

  /* The folder itself, or its raw/ as an OGB download unpacks. */
  if (snprintf(data_dir, sizeof data_dir, "%s", dir) >= OGB_PATH)
    HALO_FAIL(HALO_ERR_ARG, "%s: path too long", dir);
  if (!is_dir(dir)) HALO_FAIL(HALO_ERR_IO, "%s: not a folder", dir);
  HALO_TRY(find_csv(out->edges, data_dir, "edge", &found));
  if (!found) {
    HALO_TRY(join(data_dir, dir, "raw"));
    HALO_TRY(find_csv(out->edges, data_dir, "edge", &found));
    char npz[OGB_PATH];
    HALO_TRY(join(npz, data_dir, "data.npz"));
    /* halo_load reads the binary layout before it gets here: this is the
     * distributed partitioner, which does not read it by slices yet. */
    if (!found && is_file(npz))
      HALO_FAIL(HALO_ERR_UNSUPPORTED,
                "%s: OGB's binary layout (raw/data.npz) cannot be read by slices yet, so "
                "--method ptscotch cannot partition it (use another --method)",
                dir);
    if (!found)
      HALO_FAIL(HALO_ERR_IO,
                "%s: no edge.csv[.gz] (nor raw/edge.csv[.gz], nor raw/data.npz); not an OGB "
                "dataset folder",
                dir);
    top_dir = dir;
  } else {
    /* Pointed at DATASET/raw: the split sits in DATASET/split. */
    size_t len = strlen(data_dir);
    while (len > 1 && data_dir[len - 1] == '/') data_dir[--len] = '\0';
    if (len >= 4 && strcmp(data_dir + len - 4, "/raw") == 0) {
      memcpy(parent_dir, data_dir, len - 4);
      parent_dir[len - 4] = '\0';
      top_dir = parent_dir[0] ? parent_dir : "/";
    } else if (strcmp(data_dir, "raw") == 0) {
      top_dir = ".";
    }
  }
  HALO_TRY(find_csv(out->nodes, data_dir, "num-node-list", &found));
  if (!found)
    HALO_FAIL(HALO_ERR_IO, "%s/num-node-list.csv[.gz]: missing (the node count)", data_dir);
  HALO_TRY(find_csv(out->edge_count, data_dir, "num-edge-list", &found));
  if (!found) out->edge_count[0] = '\0';
  HALO_TRY(find_csv(out->features, data_dir, "node-feat", &found));
  if (!found) out->features[0] = '\0';
  HALO_TRY(find_csv(out->labels, data_dir, "node-label", &found));
  if (!found) out->labels[0] = '\0';
  HALO_TRY(find_csv(out->edge_feat, data_dir, "edge-feat", &found));
  if (!found) out->edge_feat[0] = '\0';
  if (found) {
    int32_t width = 0;
    HALO_TRY(edge_feat_width(out->edge_feat, &width));
    out->edge_weighted = width == 1;
  }
  if (!opt->skip_split)
    HALO_TRY(load_ogb_find_splits(data_dir, top_dir, opt->split_name, out->split, &out->has_split));
done:
  return st;
}

halo_status halo_load_count(const char *path, halo_digest_chunked *digest, int64_t *count) {
  return read_count(path, digest, count);
}

halo_status load_ogb(const char *dir, const halo_load_options *opt, halo_graph **out) {
  halo_status st = HALO_OK;
  load_edges edges = {0};
  load_weights weights = {0};
  halo_graph *g = NULL;
  halo_ogb_files *f = NULL;
  halo_digest_chunked digest;
  halo_digest_chunked_init(&digest);
  *out = NULL;
  HALO_ALLOC(f, 1, "OGB file names");
  /* OGB's binary layout (ogb's binary=True, as ogbn-papers100M ships):
   * raw/data.npz where the CSV layout has edge.csv. */
  char npz[OGB_PATH];
  int csv = 0;
  HALO_TRY(find_csv(npz, dir, "edge", &csv));
  if (!csv) {
    HALO_TRY(join(npz, dir, "raw"));
    HALO_TRY(find_csv(npz, npz, "edge", &csv));
  }
  for (int k = 0; k < 2 && !csv; k++) {
    HALO_TRY(join(npz, dir, k == 0 ? "data.npz" : "raw/data.npz"));
    if (!is_file(npz)) continue;
    /* Pointed at DATASET/raw: the split sits in DATASET/split. */
    char data_dir[OGB_PATH], parent[OGB_PATH];
    HALO_TRY(join(data_dir, dir, k == 0 ? "." : "raw"));
    HALO_TRY(join(parent, dir, ".."));
    HALO_TRY(load_ogb_binary(dir, data_dir, k == 0 ? parent : dir, opt, out));
    goto done;
  }
  HALO_TRY(halo_load_ogb_files(dir, opt, f));

  int64_t n = 0, m_hint = 0;
  HALO_TRY(read_count(f->nodes, &digest, &n));
  if (n > ((int64_t)1 << 32))
    HALO_FAIL(HALO_ERR_LIMIT, "%s: %lld nodes exceed the loaders' limit of 2^32", f->nodes,
              (long long)n);
  if (f->edge_count[0]) HALO_TRY(read_count(f->edge_count, NULL, &m_hint));
  HALO_TRY(load_check_memory(f->nodes, 0, n, m_hint));
  edges.narrow = 1; /* ids in [0, n) fit 32 bits */
  HALO_TRY(load_edges_reserve(&edges, m_hint < (1ll << 32) ? m_hint : 0));

  edges.path = f->edges;
  HALO_TRY(read_edges(f->edges, n, &digest, &edges));
  HALO_TRY(load_graph_create(f->edges, n, &g));
  if (f->edge_weighted) { /* wider edge features are not weights: not read */
    weights.path = f->edge_feat;
    HALO_TRY(read_edge_weights(f->edge_feat, edges.count, &digest, &weights));
    HALO_TRY(load_edges_to_csr_weighted(&edges, &weights, g));
  } else {
    HALO_TRY(load_edges_to_csr(&edges, g));
  }

  if (f->features[0]) HALO_TRY(load_features_file(g, f->features, NULL, &digest));
  if (f->labels[0]) HALO_TRY(load_labels_file(g, f->labels, NULL, &digest));
  if (f->has_split) {
    const char *const paths[3] = {f->split[0], f->split[1], f->split[2]};
    HALO_TRY(load_split_files(g, paths, &digest));
  }

  load_set_source(g, dir);
  g->source_digest = halo_digest_chunked_final(&digest);
  *out = g;
  g = NULL;
done:
  free(f);
  load_edges_free(&edges);
  load_weights_free(&weights);
  halo_graph_destroy(&g);
  return st;
}
