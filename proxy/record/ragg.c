/* ragg: read aggregates, counted on the writer thread. See ragg.h. */
#include "record/ragg.h"

#include <stdlib.h>
#include <string.h>

#include "record/row.h"

void ragg_free(struct ragg *g)
{
    free(g->classes);
    memset(g, 0, sizeof *g);
}

/* The key's class (0: unknown). */
static uint32_t ragg_class_of(const struct ragg *g, uint64_t hash)
{
    if (!g->classes)
        return 0;
    uint64_t k = hash | 255;
    size_t mask = g->nclass_slots - 1;
    for (size_t i = (hash >> 8) & mask;; i = (i + 1) & mask) {
        uint64_t v = g->classes[i];
        if (!v)
            return 0;
        if ((v | 255) == k)
            return (uint32_t)(v & 255);
    }
}

/* Doubles the class map (from 4096 slots): false when it may not grow. */
static bool ragg_class_grow(struct ragg *g)
{
    size_t ns = g->nclass_slots ? g->nclass_slots * 2 : 4096;
    if (ns > RAGG_CLASS_SLOTS)
        return false;
    uint64_t *t = calloc(ns, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < g->nclass_slots; i++) {
        uint64_t v = g->classes[i];
        if (!v)
            continue;
        size_t j = (v >> 8) & (ns - 1);
        while (t[j])
            j = (j + 1) & (ns - 1);
        t[j] = v;
    }
    free(g->classes);
    g->classes = t;
    g->nclass_slots = ns;
    return true;
}

void ragg_note_write(struct ragg *g, uint64_t hash, uint32_t class_id)
{
    if (!class_id || class_id > 255)
        return;
    if ((g->nclasses + 1) * 4 > g->nclass_slots * 3 && !ragg_class_grow(g) && !g->classes)
        return;
    uint64_t k = hash | 255;
    size_t mask = g->nclass_slots - 1;
    for (size_t i = (hash >> 8) & mask;; i = (i + 1) & mask) {
        uint64_t v = g->classes[i];
        if (v && (v | 255) != k)
            continue;
        if (!v) {
            if ((g->nclasses + 1) * 4 > g->nclass_slots * 3)
                return; /* full: this key's misses count in class 0 */
            g->nclasses++;
        }
        g->classes[i] = (hash & ~(uint64_t)255) | class_id;
        return;
    }
}

bool ragg_note_read(struct ragg *g, int64_t run_id, const struct rec_row *row)
{
    /* a hit's class is the item's; a miss's the one its key was last
     * written in */
    uint32_t cls = row->hit ? row->class_id : ragg_class_of(g, row->key_hash);
    int64_t minute = row->t_ns / 60000000000ll;
    if (g->run != run_id && g->ncells)
        return false;
    g->run = run_id;
    for (size_t i = g->ncells; i-- > 0;) {
        struct ragg_cell *c = &g->cell[i];
        if (c->minute == minute && c->class_id == cls) {
            c->reads++;
            c->hits += row->hit;
            c->misses += !row->hit;
            return true;
        }
    }
    if (g->ncells == RAGG_CELLS)
        return false;
    g->cell[g->ncells++] = (struct ragg_cell){ minute, cls, 1, row->hit, !row->hit };
    return true;
}

void ragg_cells_done(struct ragg *g)
{
    g->ncells = 0;
}
