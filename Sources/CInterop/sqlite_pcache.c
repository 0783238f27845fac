// SQLite's own page cache (pcache1), behind a thin wrapper that spares the
// writer a walk of its whole cache at most commits.
//
// At the end of every transaction the pager truncates its cache to the
// database's size (xTruncate(dbSize + 1)). pcache1 does nothing when its
// highest key is below that limit; otherwise it walks every hash bucket and
// every cached page (16,384 pages with Herald's 64 MiB cache: ~1–2 ms of
// cache misses). Its highest key only grows until such a truncate. And
// b-tree balancing (balance_nonroot) swaps two new pages' numbers through a
// temporary key, the lock page (PENDING_BYTE / page size + 1: 262,145 with
// 4 KiB pages), so every transaction whose inserts split a page out of order
// left pcache1's highest key at 262,145 and paid the whole walk at its
// commit: measured on the store writer under a drain, 33 walks a second and
// 13 % of the writer's time (bench/RESULTS.md, "Session 41").
//
// The wrapper keeps its own bound: the highest key any page was created
// under, and the few pages parked under a key above it (a swap's temporary
// key, moved away two calls later). A truncate that can drop nothing is not
// passed on; any other is, and pcache1 drops exactly what it would have.
// Each cache belongs to one connection, whose calls SQLite serializes.
#include "CInterop.h"

#include <stdlib.h>

#define PARKED_LIMIT 8

typedef struct {
    sqlite3_pcache *inner;
    unsigned int maxKey;               // every created page's key is ≤ this, but the parked ones
    unsigned int parked[PARKED_LIMIT]; // keys above maxKey that a page was moved to (0: free slot; keys are ≥ 1)
    unsigned long passed, skipped;     // truncates passed on to pcache1, and not
} BoundedCache;

static sqlite3_pcache_methods2 inner;
static int installed;  // whether SQLite took the wrapper (sqlite3_config answers nothing once initialized)

static int pc_init(void *arg) { (void)arg; return inner.xInit(inner.pArg); }
static void pc_shutdown(void *arg) { (void)arg; inner.xShutdown(inner.pArg); }

static sqlite3_pcache *pc_create(int szPage, int szExtra, int bPurgeable) {
    BoundedCache *cache = calloc(1, sizeof *cache);
    if (!cache) return NULL;
    cache->inner = inner.xCreate(szPage, szExtra, bPurgeable);
    if (!cache->inner) {
        free(cache);
        return NULL;
    }
    return (sqlite3_pcache *)cache;
}

static BoundedCache *bounded(sqlite3_pcache *p) { return (BoundedCache *)p; }

static void pc_cachesize(sqlite3_pcache *p, int nCachesize) { inner.xCachesize(bounded(p)->inner, nCachesize); }
static int pc_pagecount(sqlite3_pcache *p) { return inner.xPagecount(bounded(p)->inner); }

static int parked_index(const BoundedCache *cache, unsigned int key) {
    for (int i = 0; i < PARKED_LIMIT; i++) {
        if (cache->parked[i] == key) return i;
    }
    return -1;
}

static void unpark(BoundedCache *cache, unsigned int key) {
    int i = parked_index(cache, key);
    if (i >= 0) cache->parked[i] = 0;
}

static sqlite3_pcache_page *pc_fetch(sqlite3_pcache *p, unsigned int key, int createFlag) {
    BoundedCache *cache = bounded(p);
    sqlite3_pcache_page *page = inner.xFetch(cache->inner, key, createFlag);
    // A page found or created under a key above the bound raises it, unless
    // it is a parked page (the bound stays low; the parking is remembered).
    if (page && key > cache->maxKey && parked_index(cache, key) < 0) cache->maxKey = key;
    return page;
}

static void pc_unpin(sqlite3_pcache *p, sqlite3_pcache_page *page, int discard) {
    inner.xUnpin(bounded(p)->inner, page, discard);
}

static void pc_rekey(sqlite3_pcache *p, sqlite3_pcache_page *page, unsigned int oldKey, unsigned int newKey) {
    BoundedCache *cache = bounded(p);
    inner.xRekey(cache->inner, page, oldKey, newKey);
    unpark(cache, oldKey);
    if (newKey <= cache->maxKey || parked_index(cache, newKey) >= 0) return;
    int slot = parked_index(cache, 0);
    if (slot >= 0) {
        cache->parked[slot] = newKey;
    } else {
        cache->maxKey = newKey;  // too many parked: the plain bound (correct, as slow as pcache1)
    }
}

static void pc_truncate(sqlite3_pcache *p, unsigned int iLimit) {
    BoundedCache *cache = bounded(p);
    int parkedAbove = 0;
    for (int i = 0; i < PARKED_LIMIT; i++) {
        if (cache->parked[i] != 0 && cache->parked[i] >= iLimit) parkedAbove = 1;
    }
    if (cache->maxKey < iLimit && !parkedAbove) {  // no page of the cache has a key ≥ iLimit
        cache->skipped++;
        return;
    }
    cache->passed++;
    inner.xTruncate(cache->inner, iLimit);
    if (cache->maxKey >= iLimit) cache->maxKey = iLimit > 0 ? iLimit - 1 : 0;
    for (int i = 0; i < PARKED_LIMIT; i++) {
        if (cache->parked[i] >= iLimit) cache->parked[i] = 0;
    }
}

static void pc_destroy(sqlite3_pcache *p) {
    BoundedCache *cache = bounded(p);
    inner.xDestroy(cache->inner);
    free(cache);
}

static void pc_shrink(sqlite3_pcache *p) { inner.xShrink(bounded(p)->inner); }

static const sqlite3_pcache_methods2 methods = {
    1, NULL, pc_init, pc_shutdown, pc_create, pc_cachesize, pc_pagecount,
    pc_fetch, pc_unpin, pc_rekey, pc_truncate, pc_destroy, pc_shrink,
};

int cinterop_sqlite_use_bounded_page_cache(void) {
    if (installed) return SQLITE_OK;
    sqlite3_pcache_methods2 defaults;
    int rc = sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &defaults);
    if (rc != SQLITE_OK) return rc;
    if (defaults.iVersion < 1 || !defaults.xCreate || !defaults.xTruncate) return SQLITE_MISUSE;
    inner = defaults;
    rc = sqlite3_config(SQLITE_CONFIG_PCACHE2, &methods);
    installed = rc == SQLITE_OK;
    return rc;
}

const sqlite3_pcache_methods2 *cinterop_sqlite_bounded_page_cache(void) { return installed ? &methods : NULL; }

void cinterop_sqlite_bounded_page_cache_truncates(sqlite3_pcache *p, unsigned long *passed, unsigned long *skipped) {
    *passed = bounded(p)->passed;
    *skipped = bounded(p)->skipped;
}
