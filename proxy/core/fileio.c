#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *fileio_read(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (!f) {
        snprintf(err, errlen, "%s", strerror(errno));
        goto out;
    }
    buf = malloc(max + 1);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    n = fread(buf, 1, max + 1, f);
    if (ferror(f) || n > max) {
        if (n > max)
            snprintf(err, errlen, "larger than %zu bytes", max);
        else
            snprintf(err, errlen, "%s", strerror(errno));
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    *len = n;
out:
    if (f)
        fclose(f);
    return buf;
}

int fileio_mkdirs(const char *path, char *err, size_t errlen)
{
    char p[4096];
    struct stat st;
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof p) {
        snprintf(err, errlen, "bad directory name");
        return -1;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", p, strerror(errno));
            return -1;
        }
        p[i] = c;
    }
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", path);
        return -1;
    }
    return 0;
}
