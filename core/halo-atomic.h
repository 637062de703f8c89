/* Atomic outputs: a file or folder that appears under its name only when it
 * is complete, and survives a crash once it has.
 *
 * Every writer of halo follows one rule (docs/reliability.md, "Outputs"):
 *
 *   1. It writes under a temporary name in the same folder as NAME, so that
 *      the rename stays on one file system and is atomic, and the name is
 *      always NAME.tmp, with a suffix where two writers may meet:
 *        NAME.tmp         where one writer owns NAME (the files of a run's
 *                         own output folder, a checkpoint): a stale one of
 *                         an interrupted run is replaced (halo_atomic_tmp_name);
 *        NAME.tmp.<pid>   a folder the user names (--out DIR), which two
 *                         runs may write at once (halo_atomic_create_dir);
 *        NAME.tmp.XXXXXX  a file the user names (--json, --write-metis),
 *                         unique even when one run writes two outputs to
 *                         the same name (mkstemp, halo_atomic_create_file).
 *      So every unfinished output matches NAME.tmp*.
 *   2. It fsyncs the temporary (a file's data; a folder's entries).
 *   3. It renames the temporary over NAME.
 *   4. It fsyncs the folder that holds NAME, so that the rename itself
 *      survives a crash.
 *   On a failure, or when the run stops, the temporary is removed; NAME is
 *   never touched until step 3.
 *
 * The functions return 0 or an errno value and log nothing: each writer
 * names its output its own way ("--json FILE", a shard's path) in its
 * messages.
 */
#ifndef HALO_ATOMIC_H
#define HALO_ATOMIC_H

#include <stddef.h>

#include "halo-status.h"

/* The temporary of an owned `path` into tmp (`size` bytes): "PATH.tmp".
 * 0, or ENAMETOOLONG when it does not fit.  Local. */
int halo_atomic_tmp_name(const char *path, char *tmp, size_t size);

/* Creates the temporary file of a user-named `path`, PATH.tmp.XXXXXX
 * (mkstemp; its name into tmp, `size` bytes), with the mode that
 * fopen(path, "w") would give.  The open descriptor (write only), or
 * -errno.  Local. */
int halo_atomic_create_file(const char *path, char *tmp, size_t size);

/* Creates the temporary folder of a user-named `path`, PATH.tmp.<pid> (its
 * name into tmp, `size` bytes).  0 or errno (EEXIST when it is there).
 * Local. */
int halo_atomic_create_dir(const char *path, char *tmp, size_t size);

/* fsync of the file or folder at `path` (rule 2): 0 or errno.  Local. */
int halo_atomic_sync(const char *path);

/* fsync of the folder that holds `path` ("." when it names no folder), rule
 * 4.  Best effort: some file systems refuse fsync on a folder, and the
 * output is complete either way.  Local. */
void halo_atomic_sync_parent(const char *path);

/* Rules 3 and 4: renames `tmp` (already synced) over `path`, then fsyncs
 * path's folder.  0, or rename's errno (then nothing was renamed).
 * Local. */
int halo_atomic_rename(const char *tmp, const char *path);

/* Removes a temporary: a file, or with `is_dir` a folder and the files in
 * it (one level: halo's output folders have no sub-folders).  0 or the
 * first errno.  Local. */
int halo_atomic_remove(const char *tmp, int is_dir);

/* The check of an output before a run starts, so that a bad name fails in
 * seconds instead of after the training: the folder that would hold the
 * file `path` exists and takes a file (probed by creating and removing
 * PATH.tmp.XXXXXX there: access() says nothing of a read-only mount, and
 * root passes every mode check), nothing at `path` is a folder, and a file
 * at `path` is refused unless `force`; a device or a pipe at `path`
 * (/dev/stdout) passes as it is.  Unlike the functions above it logs:
 * one error line naming `flag` and the path, such as "--predict
 * /missing/x.h5: the folder /missing does not exist".  HALO_OK,
 * HALO_ERR_ARG (the path, the folder) or HALO_ERR_EXISTS (a file that
 * would be overwritten).  Local: under MPI one rank checks and the caller
 * agrees over the ranks. */
halo_status halo_atomic_check_target(const char *path, int force, const char *flag);

/* The same check for a folder `name` the run writes files into (halo-train
 * --checkpoint DIR): when it exists it must be a folder that takes a file
 * (probed as above); when it does not, its parent must exist and take one
 * (the run creates DIR).  One error line naming `flag`.  HALO_OK or
 * HALO_ERR_ARG.  Local. */
halo_status halo_atomic_check_folder(const char *name, const char *flag);

#endif /* HALO_ATOMIC_H */
