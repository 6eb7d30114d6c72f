#include "protocol/stats_json.h"

#include <stdbool.h>
#include <stdio.h>

/* A plain decimal ("1.25", "0.50") is a JSON number as it stands. */
static bool plain_decimal(const char *s)
{
    size_t start = s[0] == '-', i = start, digits = 0;
    while (s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (!digits || (s[start] == '0' && digits > 1))
        return false;
    if (s[i] == '.') {
        size_t frac = 0;
        i++;
        while (s[i] >= '0' && s[i] <= '9') {
            i++;
            frac++;
        }
        if (!frac)
            return false;
    }
    return s[i] == '\0';
}

void stats_json_object(struct buf *b, const struct stats_kv_list *l)
{
    buf_append(b, "{", 1);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct stats_kv *kv = &l->kv[i];
        const char *value = stats_kv_value(l, i);
        if (i)
            buf_append(b, ",", 1);
        jsonb_string(b, stats_kv_name(l, i), kv->name_len);
        buf_append(b, ":", 1);
        if (kv->has_num)
            buf_printf(b, "%lld", (long long)kv->num);
        else if (plain_decimal(value))
            buf_puts(b, value);
        else
            jsonb_string(b, value, kv->value_len);
    }
    buf_append(b, "}", 1);
}
