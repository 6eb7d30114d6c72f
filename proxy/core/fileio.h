/* fileio: a whole file into memory, with a bound -- workload files, spec
 * files, SQL files, traces.
 *
 * Owns the one reader every module uses. Must never read past max bytes
 * (a file that is larger is an error, not a truncation) and never print:
 * the reason goes into err for the caller to report with the path. */
#ifndef SLABTAP_CORE_FILEIO_H
#define SLABTAP_CORE_FILEIO_H

#include <stddef.h>

#define FILEIO_DEFAULT_MAX (16u * 1024 * 1024)

/* Reads path into a NUL-terminated heap buffer (*len bytes, NUL excluded).
 * Returns it, or NULL with the reason ("No such file or directory",
 * "larger than 16 MiB", ...) in err. The caller frees it. */
char *fileio_read(const char *path, size_t max, size_t *len, char *err, size_t errlen);

/* mkdir -p: path and every missing parent (mode 0777 before umask).
 * 0, or -1 with the reason in err. */
int fileio_mkdirs(const char *path, char *err, size_t errlen);

#endif
