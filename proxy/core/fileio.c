#include "core/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
