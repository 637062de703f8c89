/* Loaders: every input format halo reads, behind one entry point.
 *
 *   OGB raw dataset folder   edge.csv[.gz], node-feat, node-label, split/, num-node-list
 *   SNAP edge list           '#' comments, whitespace-separated ids, remapped to 0..n-1
 *   Matrix Market            coordinate pattern|real|integer, general|symmetric
 *   synthetic spec           sbm:nodes=..,classes=..,avg-degree=..,homophily=..,feat=..,seed=..
 *                            rmat:scale=..,edge-factor=..,seed=..
 *
 * Bad input is reported once, as "FILE:LINE: what is wrong", and returned as a
 * negative status; nothing exits.
 */
#ifndef HALO_LOAD_H
#define HALO_LOAD_H

#include "halo-graph.h"

typedef enum {
  HALO_FORMAT_AUTO = 0,
  HALO_FORMAT_OGB,
  HALO_FORMAT_EDGELIST,
  HALO_FORMAT_MTX,
  HALO_FORMAT_SPEC,
} halo_format;

/* Parses "auto", "ogb", "edgelist" (alias "snap"), "mtx", "spec"; anything
 * else fails with HALO_ERR_ARG and one line, "unknown format 'NAME'
 * (expected ...)", which a program prefixes with its flag
 * (halo_log_set_context). Local. */
halo_status halo_format_parse(const char *name, halo_format *out);

/* Loads `input` (a path or a synthetic spec) in format `fmt`; AUTO picks by
 * what the path is: a folder is OGB, *.mtx[.gz] is Matrix Market, a string
 * with "name:" of a known generator is a spec, anything else an edge list.
 * On success *out owns a new graph. Local. */
halo_status halo_load(const char *input, halo_format fmt, halo_graph **out);

/* Reads features (CSV rows, one per node) and/or labels (one per line) from files into g; either
 * path may be NULL. */
halo_status halo_load_node_data(halo_graph *g, const char *feat_path, const char *label_path);

/* Gives g `classes` labels, class-dependent features of width `features`, and a 10/10/80 split,
 * from `seed`. */
halo_status halo_graph_synthesize_node_data(halo_graph *g, int32_t features, int32_t classes,
                                            uint64_t seed);

#endif /* HALO_LOAD_H */
