/* The manifest of a partition run: DIR/manifest.h5.  docs/shard-format.md is
 * the user-facing description of this layout; keep the two in step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard-impl.h"

void halo_manifest_destroy(halo_manifest **m) {
  if (!m || !*m) return;
  free((*m)->part);
  free((*m)->part_digest);
  free((*m)->part_owned);
  free((*m)->part_halo);
  free((*m)->part_original_id_digest);
  free((*m)->part_edge_weight_digest);
  free(*m);
  *m = NULL;
}

halo_status halo_manifest_write(const char *path, const halo_manifest *m) {
  halo_status st = HALO_OK;
  hid_t file = H5I_INVALID_HID;
  char tmp[4096] = "";
  int created = 0;
  halo_h5_quiet();
  if (!path || !m) HALO_FAIL(HALO_ERR_ARG, "halo_manifest_write: NULL argument");
  HALO_TRY(halo__manifest_check(m, path, 1));
  HALO_TRY(halo_h5_create(path, tmp, sizeof tmp, &file));
  created = 1;

  const struct {
    const char *name;
    halo_h5_kind kind;
    const void *value;
  } attrs[] = {
      {"format_version", HALO_H5_I32, &m->format_version},
      {"nodes", HALO_H5_I64, &m->nodes},
      {"edges", HALO_H5_I64, &m->edges},
      {"features", HALO_H5_I32, &m->features},
      {"classes", HALO_H5_I32, &m->classes},
      {"parts", HALO_H5_I32, &m->parts},
      {"seed", HALO_H5_I64, &m->seed},
      {"ufactor", HALO_H5_I32, &m->ufactor},
      {"source_digest", HALO_H5_U64, &m->source_digest},
      {"run_id", HALO_H5_U64, &m->run_id},
  };
  for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
    HALO_TRY(halo_h5_attr_write(file, path, attrs[k].name, attrs[k].kind, attrs[k].value));
  if (m->multilabel)
    HALO_TRY(halo_h5_attr_write(file, path, "multilabel", HALO_H5_I32, &m->multilabel));
  HALO_TRY(halo_h5_attr_write_str(file, path, "method", m->method));
  HALO_TRY(halo_h5_attr_write_str(file, path, "objective", m->objective));
  HALO_TRY(halo_h5_attr_write_str(file, path, "source", m->source));

  hsize_t nodes[1] = {(hsize_t)m->nodes}, parts[1] = {(hsize_t)m->parts};
  HALO_TRY(halo_h5_write(file, path, "/part", HALO_H5_I32, 1, nodes, m->part));
  HALO_TRY(halo_h5_write(file, path, "/parts/digest", HALO_H5_U64, 1, parts, m->part_digest));
  HALO_TRY(halo_h5_write(file, path, "/parts/owned", HALO_H5_I64, 1, parts, m->part_owned));
  HALO_TRY(halo_h5_write(file, path, "/parts/halo", HALO_H5_I64, 1, parts, m->part_halo));
  if (m->part_original_id_digest)
    HALO_TRY(halo_h5_write(file, path, "/parts/original_id_digest", HALO_H5_U64, 1, parts,
                           m->part_original_id_digest));
  if (m->part_edge_weight_digest)
    HALO_TRY(halo_h5_write(file, path, "/parts/edge_weight_digest", HALO_H5_U64, 1, parts,
                           m->part_edge_weight_digest));
done:
  if (created) st = halo_h5_commit(st, file, tmp, path);
  return st;
}

halo_status halo_manifest_read(const char *path, halo_manifest **out) {
  return halo_manifest_read_opts(path, 0, out);
}

halo_status halo_manifest_read_opts(const char *path, unsigned flags, halo_manifest **out) {
  halo_status st = HALO_OK;
  hid_t file = H5I_INVALID_HID;
  halo_manifest *m = NULL;
  void *buf = NULL;
  halo_h5_quiet();
  if (!path || !out) HALO_FAIL(HALO_ERR_ARG, "halo_manifest_read: NULL argument");
  *out = NULL;
  unsigned unknown = flags & ~(unsigned)HALO_MANIFEST_NO_PART;
  if (unknown)
    HALO_FAIL(HALO_ERR_ARG, "%s: halo_manifest_read_opts: unknown flags 0x%x", path, unknown);
  int with_part = !(flags & HALO_MANIFEST_NO_PART);
  HALO_TRY(halo_h5_open(path, &file));
  HALO_ALLOC(m, 1, "a manifest");

  HALO_TRY(halo_h5_attr_read(file, path, "format_version", HALO_H5_I32, &m->format_version));
  HALO_TRY(halo_shard_check_version(path, m->format_version));
  HALO_TRY(halo_h5_attr_read(file, path, "nodes", HALO_H5_I64, &m->nodes));
  HALO_TRY(halo_h5_attr_read(file, path, "edges", HALO_H5_I64, &m->edges));
  HALO_TRY(halo_h5_attr_read(file, path, "features", HALO_H5_I32, &m->features));
  HALO_TRY(halo_h5_attr_read(file, path, "classes", HALO_H5_I32, &m->classes));
  int multi = halo_h5_attr_exists(file, path, "multilabel");
  if (multi < 0) HALO_TRY((halo_status)multi);
  if (multi) HALO_TRY(halo_h5_attr_read(file, path, "multilabel", HALO_H5_I32, &m->multilabel));
  HALO_TRY(halo_h5_attr_read(file, path, "parts", HALO_H5_I32, &m->parts));
  HALO_TRY(halo_h5_attr_read(file, path, "seed", HALO_H5_I64, &m->seed));
  HALO_TRY(halo_h5_attr_read(file, path, "ufactor", HALO_H5_I32, &m->ufactor));
  HALO_TRY(halo_h5_attr_read(file, path, "source_digest", HALO_H5_U64, &m->source_digest));
  HALO_TRY(halo_h5_attr_read(file, path, "run_id", HALO_H5_U64, &m->run_id));
  HALO_TRY(halo_h5_attr_read_str(file, path, "method", m->method, sizeof m->method));
  HALO_TRY(halo_h5_attr_read_str(file, path, "objective", m->objective, sizeof m->objective));
  HALO_TRY(halo_h5_attr_read_str(file, path, "source", m->source, sizeof m->source));
  if (m->nodes < 0 || m->parts < 1)
    HALO_FAIL(HALO_ERR_FORMAT, "%s: nodes = %lld, parts = %d are implausible", path,
              (long long)m->nodes, (int)m->parts);

  hsize_t nodes[2] = {(hsize_t)m->nodes, 0}, parts[2] = {(hsize_t)m->parts, 0};
  /* Without /part's values, its type and shape are still checked (metadata
   * only): a manifest reads as valid or not the same way for every reader. */
  HALO_TRY(halo_h5_read(file, path, "/part", HALO_H5_I32, 1, nodes, 1, with_part ? &buf : NULL));
  m->part = buf;
  HALO_TRY(halo_h5_read(file, path, "/parts/digest", HALO_H5_U64, 1, parts, 1, &buf));
  m->part_digest = buf;
  HALO_TRY(halo_h5_read(file, path, "/parts/owned", HALO_H5_I64, 1, parts, 1, &buf));
  m->part_owned = buf;
  HALO_TRY(halo_h5_read(file, path, "/parts/halo", HALO_H5_I64, 1, parts, 1, &buf));
  m->part_halo = buf;
  buf = NULL;
  /* Optional: present when the run stores original ids in its parts. */
  int has_original = halo_h5_exists(file, path, "/parts/original_id_digest");
  if (has_original < 0) HALO_TRY((halo_status)has_original); /* already logged */
  if (has_original) {
    HALO_TRY(halo_h5_read(file, path, "/parts/original_id_digest", HALO_H5_U64, 1, parts, 1, &buf));
    m->part_original_id_digest = buf;
    buf = NULL;
  }
  /* Optional: present when the run's graph is weighted. */
  int has_weights = halo_h5_exists(file, path, "/parts/edge_weight_digest");
  if (has_weights < 0) HALO_TRY((halo_status)has_weights); /* already logged */
  if (has_weights) {
    HALO_TRY(halo_h5_read(file, path, "/parts/edge_weight_digest", HALO_H5_U64, 1, parts, 1, &buf));
    m->part_edge_weight_digest = buf;
    buf = NULL;
  }
  HALO_TRY(halo__manifest_check(m, path, with_part));
  *out = m;
  m = NULL;
done:
  halo_manifest_destroy(&m);
  if (file >= 0) H5Fclose(file);
  return st;
}
