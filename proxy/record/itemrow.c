/* itemrow: issue 22's rows as column values, for both stores. */
#include "record/itemrow.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/mc_parse.h"
#include "record/row.h"

static int64_t clamp_u64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

void itemrow_event(const struct rec_row *r, struct itemrow_event *out)
{
    bool del = r->event == REC_EVENT_DELETED;
    memset(out, 0, sizeof *out);
    out->seq = clamp_u64(r->seq);
    out->t_ns = r->t_ns;
    out->event = r->event;
    out->key_hash = (int64_t)r->key_hash;
    out->key_len = r->key_len;
    out->class_id = r->class_id;
    out->size = (struct itemrow_opt){ r->value_len < 0, r->value_len };
    out->fetched = (struct itemrow_opt){ del, r->fetched ? 1 : 0 };
    out->idle_s = (struct itemrow_opt){ del, r->idle_s };
    out->ttl_left = (struct itemrow_opt){ del, r->exptime < 0 ? -1 : r->exptime };
    out->cmd = !del                      ? NULL
               : r->cmd == MC_CMD_MD     ? "md"
               : r->cmd == MC_CMD_DELETE ? "delete"
                                         : mc_cmd_name((enum mc_cmd)r->cmd);
}

void itemrow_item(const struct rec_row *r, struct itemrow_item *out)
{
    memset(out, 0, sizeof *out);
    out->snap = r->snap;
    out->seq = clamp_u64(r->seq);
    out->key_hash = (int64_t)r->key_hash;
    out->key_len = r->key_len;
    out->class_id = r->class_id;
    out->size = r->value_len < 0 ? 0 : r->value_len;
    out->ttl_left = r->exptime < 0 ? -1 : r->exptime;
    out->idle_s = r->idle_s;
    out->fetched = r->fetched ? 1 : 0;
    out->flags = (struct itemrow_opt){ !r->has_flags, r->flags };
}

/* The number after "name": in the JSON object text (0 when absent); *found. */
static int64_t json_num(const char *text, const char *name, bool *found)
{
    char pat[32];
    size_t n = strlen(name);
    *found = false;
    if (!text || n + 3 > sizeof pat)
        return 0;
    pat[0] = '"';
    memcpy(pat + 1, name, n);
    pat[n + 1] = '"';
    pat[n + 2] = '\0';
    const char *p = strstr(text, pat);
    if (!p)
        return 0;
    p += n + 2;
    while (*p == ' ' || *p == ':')
        p++;
    *found = true;
    if (!strncmp(p, "true", 4))
        return 1;
    if (!strncmp(p, "false", 5) || !strncmp(p, "null", 4))
        return 0;
    return strtoll(p, NULL, 10);
}

void itemrow_snapshot(const struct rec_job *j, struct itemrow_snapshot *out)
{
    bool found;
    memset(out, 0, sizeof *out);
    out->snap = j->phase_id;
    out->t_ns = j->t_ns;
    int64_t ended = json_num(j->text, "ended_ns", &found);
    out->ended_ns = (struct itemrow_opt){ !found || ended <= 0, ended };
    out->items = json_num(j->text, "items", &found);
    out->bytes = json_num(j->text, "bytes", &found);
    out->complete = json_num(j->text, "complete", &found) != 0;
}

const char *itemrow_key(const struct rec_row *r, size_t *len)
{
    if (r->key_text_len < 0) {
        *len = 0;
        return NULL;
    }
    size_t n = (size_t)r->key_text_len;
    *len = n < sizeof r->key_text ? n : sizeof r->key_text - 1;
    return r->key_text;
}
