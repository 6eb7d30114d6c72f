/* stats_json: a parsed `stats` answer as a JSON object, so every field a
 * memcached reports -- known to slabtap or not -- is kept in the database.
 * Must never drop or rename a field; integers and plain decimals become
 * JSON numbers, everything else a string. */
#ifndef SLABTAP_PROTOCOL_STATS_JSON_H
#define SLABTAP_PROTOCOL_STATS_JSON_H

#include "core/jsonb.h"
#include "protocol/stats_parse.h"

/* {"name": value, ...} appended to b. */
void stats_json_object(struct buf *b, const struct stats_kv_list *l);

#endif
