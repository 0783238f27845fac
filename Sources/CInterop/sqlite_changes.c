// Row changes of one table from SQLite's pre-update hook (CInterop.h,
// `cinterop_row_changes_*`). The store's writer reads them after each
// statement to keep its derived rows — per-state counts, the campaign
// funnel's counts, the state events — which per-row triggers kept before
// schema v17: a trigger's program costs a frame per row, and its counts
// are an upsert per row where the writer makes one per transaction.
//
// Debian's SQLite is built with SQLITE_ENABLE_PREUPDATE_HOOK. The hook runs
// inside sqlite3_step, so it only copies: values into one growing array,
// texts into one growing byte buffer (offsets, turned into pointers when
// read). An allocation failure is remembered (`count` answers -1) rather
// than reported from the hook, which cannot fail the statement.
// The hook's functions are declared only with this defined (the library has them).
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include "CInterop.h"

#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 64

typedef struct {
    int type;
    sqlite3_int64 integer;   // the integer, or the text's offset in `bytes`
    int length;
} Kept;

typedef struct {
    int op;
    sqlite3_int64 rowid;
} Change;

struct cinterop_row_changes {
    char *table;
    int columns[MAX_COLUMNS];
    int count;
    unsigned long long watched;
    int failed;
    Change *changes;
    int used, capacity;          // changes
    Kept *values;                // 2 × count per change (before, after)
    unsigned char *bytes;
    size_t bytes_used, bytes_capacity;
};

static int grow(void **buffer, size_t *capacity, size_t needed, size_t unit) {
    // `needed` units in `*buffer` (doubling from 64); 0 when out of memory.
    if (needed <= *capacity) return 1;
    size_t next = *capacity ? *capacity : 64;
    while (next < needed) next *= 2;
    void *grown = realloc(*buffer, next * unit);
    if (!grown) return 0;
    *buffer = grown;
    *capacity = next;
    return 1;
}

static int same(sqlite3_value *a, sqlite3_value *b) {
    int type = sqlite3_value_type(a);
    if (type != sqlite3_value_type(b)) return 0;
    switch (type) {
    case SQLITE_NULL: return 1;
    case SQLITE_INTEGER: return sqlite3_value_int64(a) == sqlite3_value_int64(b);
    case SQLITE_FLOAT: return sqlite3_value_double(a) == sqlite3_value_double(b);
    default: {
        int n = sqlite3_value_bytes(a);
        if (n != sqlite3_value_bytes(b)) return 0;
        const void *x = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(a) : sqlite3_value_blob(a);
        const void *y = type == SQLITE_TEXT ? (const void *)sqlite3_value_text(b) : sqlite3_value_blob(b);
        return n == 0 || (x && y && memcmp(x, y, (size_t)n) == 0);
    }
    }
}

static int keep(cinterop_row_changes *c, Kept *slot, sqlite3_value *value) {
    slot->type = value ? sqlite3_value_type(value) : SQLITE_NULL;
    slot->integer = 0;
    slot->length = 0;
    if (slot->type == SQLITE_INTEGER) {
        slot->integer = sqlite3_value_int64(value);
    } else if (slot->type == SQLITE_TEXT) {
        const unsigned char *text = sqlite3_value_text(value);
        int n = sqlite3_value_bytes(value);
        if (!text) return 0;
        size_t capacity = c->bytes_capacity;
        void *buffer = c->bytes;
        if (!grow(&buffer, &capacity, c->bytes_used + (size_t)n + 1, 1)) return 0;
        c->bytes = buffer;
        c->bytes_capacity = capacity;
        memcpy(c->bytes + c->bytes_used, text, (size_t)n);
        c->bytes[c->bytes_used + (size_t)n] = 0;
        slot->integer = (sqlite3_int64)c->bytes_used;
        slot->length = n;
        c->bytes_used += (size_t)n + 1;
    } else {
        slot->type = SQLITE_NULL;
    }
    return 1;
}

static void hook(void *context, sqlite3 *db, int op, const char *database, const char *table, sqlite3_int64 old_key,
                 sqlite3_int64 new_key) {
    (void)new_key;
    cinterop_row_changes *c = context;
    if (c->failed || op == SQLITE_INSERT) return;
    if (strcmp(database, "main") != 0 || strcmp(table, c->table) != 0) return;
    sqlite3_value *before[MAX_COLUMNS], *after[MAX_COLUMNS];
    int changed = op != SQLITE_UPDATE;  // a DELETE is always kept
    // The watched columns first: an UPDATE changing none of them (a claim)
    // reads nothing else.
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < c->count; i++) {
            if (((c->watched >> i) & 1) == (unsigned long long)pass) continue;  // pass 0: watched, 1: the rest
            before[i] = NULL;
            after[i] = NULL;
            if (sqlite3_preupdate_old(db, c->columns[i], &before[i]) != SQLITE_OK) before[i] = NULL;
            if (op == SQLITE_UPDATE && sqlite3_preupdate_new(db, c->columns[i], &after[i]) != SQLITE_OK) after[i] = NULL;
            // Unreadable: keep it, the reader decides.
            if (pass == 0 && !changed && (!before[i] || !after[i] || !same(before[i], after[i]))) changed = 1;
        }
        if (!changed) return;
    }
    if (c->used == c->capacity) {
        int next = c->capacity ? c->capacity * 2 : 64;
        Change *changes = realloc(c->changes, (size_t)next * sizeof(Change));
        if (!changes) {
            c->failed = 1;
            return;
        }
        c->changes = changes;  // capacity follows once the values have grown too
        Kept *values = realloc(c->values, (size_t)next * 2 * (size_t)c->count * sizeof(Kept));
        if (!values) {
            c->failed = 1;
            return;
        }
        c->values = values;
        c->capacity = next;
    }
    Kept *slots = c->values + (size_t)c->used * 2 * (size_t)c->count;
    for (int i = 0; i < c->count; i++) {
        if (!keep(c, &slots[i], before[i]) || !keep(c, &slots[c->count + i], op == SQLITE_UPDATE ? after[i] : NULL)) {
            c->failed = 1;
            return;
        }
    }
    c->changes[c->used].op = op;
    c->changes[c->used].rowid = old_key;
    c->used += 1;
}

cinterop_row_changes *cinterop_row_changes_install(sqlite3 *db, const char *table, const int *columns, int count,
                                                   unsigned long long watched) {
    if (count <= 0 || count > MAX_COLUMNS) return NULL;
    cinterop_row_changes *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->table = strdup(table);
    if (!c->table) {
        free(c);
        return NULL;
    }
    memcpy(c->columns, columns, (size_t)count * sizeof(int));
    c->count = count;
    c->watched = watched;
    (void)sqlite3_preupdate_hook(db, hook, c);
    return c;
}

void cinterop_row_changes_remove(cinterop_row_changes *c, sqlite3 *db) {
    if (!c) return;
    (void)sqlite3_preupdate_hook(db, NULL, NULL);
    free(c->changes);
    free(c->values);
    free(c->bytes);
    free(c->table);
    free(c);
}

int cinterop_row_changes_count(const cinterop_row_changes *c) { return c->failed ? -1 : c->used; }

int cinterop_row_changes_op(const cinterop_row_changes *c, int index) { return c->changes[index].op; }

sqlite3_int64 cinterop_row_changes_rowid(const cinterop_row_changes *c, int index) { return c->changes[index].rowid; }

cinterop_row_value cinterop_row_changes_value(const cinterop_row_changes *c, int index, int after, int column) {
    const Kept *kept = &c->values[((size_t)index * 2 + (after ? 1 : 0)) * (size_t)c->count + (size_t)column];
    cinterop_row_value value = {kept->type, kept->integer, NULL, 0};
    if (kept->type == SQLITE_TEXT) {
        value.integer = 0;
        value.text = c->bytes + kept->integer;
        value.length = kept->length;
    }
    return value;
}

void cinterop_row_changes_clear(cinterop_row_changes *c) {
    c->used = 0;
    c->bytes_used = 0;
    c->failed = 0;
}

