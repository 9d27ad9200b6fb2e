/* compiler/frontend/meta.c - MetaGraphDef and SavedModel specifics.
 *
 * fe_load (load.c) decodes the file; this file picks the meta graph of a
 * SavedModel (the first tagged "serve", else the first, as TF Serving and
 * saved_model_cli do by default), orders the signature maps by key, and
 * chooses the signature whose tensors become the default feeds/fetches:
 * "serving_default" (TF's DEFAULT_SERVING_SIGNATURE_DEF_KEY), else the only
 * candidate.  Keys starting "__" (TF2's "__saved_model_init_op", which
 * runs table initializers) are internal and never candidates.
 * Invariants: nothing here allocates; sorting permutes the pointer arrays
 * protobuf-c allocated, which protobuf_c_message_free_unpacked frees in any
 * order.  Duplicate map keys (legal on the wire, last one wins) keep their
 * file order after the stable sort, so lookups take the last match.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/fe_int.h"

int fe_savedmodel_pick(const Tensorflow__SavedModel *sm)
{
    if (!sm || sm->n_meta_graphs == 0)
        return -1;
    for (size_t i = 0; i < sm->n_meta_graphs && i < (size_t)INT32_MAX; i++) {
        const Tensorflow__MetaGraphDef__MetaInfoDef *mi = sm->meta_graphs[i]->meta_info_def;
        for (size_t t = 0; mi && t < mi->n_tags; t++)
            if (mi->tags[t] && !strcmp(mi->tags[t], "serve"))
                return (int)i;
    }
    return 0;
}

/* Stable insertion sort of map entries by key (maps are small; merge sort
 * would need scratch memory).  `key` reads an entry's key. */
static void sort_entries(void **a, size_t n, const char *(*key)(const void *))
{
    for (size_t i = 1; i < n; i++) {
        void *e = a[i];
        const char *k = key(e) ? key(e) : "";
        size_t j = i;
        while (j > 0) {
            const char *p = key(a[j - 1]) ? key(a[j - 1]) : "";
            if (strcmp(p, k) <= 0)
                break;
            a[j] = a[j - 1];
            j--;
        }
        a[j] = e;
    }
}

static const char *sig_key(const void *e)
{
    return ((const Tensorflow__MetaGraphDef__SignatureDefEntry *)e)->key;
}

static const char *tensor_key(const void *e)
{
    return ((const Tensorflow__SignatureDef__InputsEntry *)e)->key;
}

void fe_metagraph_sort_signatures(Tensorflow__MetaGraphDef *meta)
{
    if (!meta)
        return;
    sort_entries((void **)meta->signature_def, meta->n_signature_def, sig_key);
    for (size_t i = 0; i < meta->n_signature_def; i++) {
        Tensorflow__SignatureDef *s = meta->signature_def[i]->value;
        if (!s)
            continue;
        /* InputsEntry and OutputsEntry have the same layout (key, value). */
        sort_entries((void **)s->inputs, s->n_inputs, tensor_key);
        sort_entries((void **)s->outputs, s->n_outputs, tensor_key);
    }
}

static bool is_candidate(const Tensorflow__MetaGraphDef__SignatureDefEntry *e)
{
    return e->key && strncmp(e->key, "__", 2) != 0 && e->value;
}

const Tensorflow__SignatureDef *fe_default_signature(const FeModel *m, const char **key, Status *st)
{
    if (key)
        *key = NULL;
    const Tensorflow__MetaGraphDef *mg = m ? m->meta : NULL;
    if (!mg)
        return NULL;
    const Tensorflow__MetaGraphDef__SignatureDefEntry *only = NULL, *dflt = NULL;
    size_t n_cand = 0;
    for (size_t i = 0; i < mg->n_signature_def; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        if (!is_candidate(e))
            continue;
        if (!strcmp(e->key, "serving_default"))
            dflt = e; /* last duplicate wins */
        else if (!only || strcmp(only->key, e->key))
            n_cand++;
        only = e;
    }
    if (dflt || n_cand == 1) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = dflt ? dflt : only;
        if (key)
            *key = e->key;
        return e->value;
    }
    if (n_cand == 0)
        return NULL;
    char list[1024];
    size_t at = 0;
    list[0] = 0;
    for (size_t i = 0; i < mg->n_signature_def && at < sizeof list; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        if (is_candidate(e) &&
            (i == 0 || strcmp(mg->signature_def[i - 1]->key ? mg->signature_def[i - 1]->key : "", e->key)))
            at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s'", at ? ", " : "", e->key);
    }
    st_errorf(st, ST_ERROR,
              "%s: %zu signatures and none is 'serving_default' (%s): give the tensors with --feed/--fetch",
              m->path ? m->path : "<input>", n_cand, list);
    return NULL;
}

const Tensorflow__SignatureDef *fe_signature(const FeModel *m, const char *key, Status *st)
{
    const Tensorflow__MetaGraphDef *mg = m ? m->meta : NULL;
    const char *path = m && m->path ? m->path : "<input>";
    if (!mg) {
        st_errorf(st, ST_ERROR, "%s: --signature %s: the model is a plain GraphDef, it has no signatures",
                  path, key);
        return NULL;
    }
    const Tensorflow__SignatureDef *found = NULL;
    for (size_t i = 0; i < mg->n_signature_def; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        if (e->key && e->value && !strcmp(e->key, key))
            found = e->value; /* last duplicate wins */
    }
    if (found)
        return found;
    char list[1024];
    size_t at = 0;
    list[0] = 0;
    for (size_t i = 0; i < mg->n_signature_def && at < sizeof list; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        if (e->key &&
            (i == 0 || strcmp(mg->signature_def[i - 1]->key ? mg->signature_def[i - 1]->key : "", e->key)))
            at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s'", at ? ", " : "", e->key);
    }
    st_errorf(st, ST_ERROR, "%s: no signature '%s' (the model has %s)", path, key,
              mg->n_signature_def ? list : "none");
    return NULL;
}
