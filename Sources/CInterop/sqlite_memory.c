// SQLite's allocator: glibc malloc, plus a small per-thread cache of freed
// blocks up to 8 KiB (what SQLite's lookaside would do, per thread).
//
// Debian's SQLite is built with SQLITE_OMIT_LOOKASIDE, so every allocation
// of a statement goes to malloc. Blocks up to 1,032 bytes are glibc's
// per-thread tcache (fast); larger ones — a trigger program's frame (1.3 and
// 3.7 KiB on every INSERT into `messages`), b-tree balance scratch, pages —
// went through glibc's bins, whose unlink_chunk was the store writer's
// biggest single cost under a Schedule load; and the ~100 small blocks of
// each INSERT outran glibc's tcache (7 blocks per size) into its bins too.
// Sizes are rounded up to a multiple of 16 bytes (up to 1 KiB, kept up to
// SMALL_DEPTH per size) or 256 bytes (up to 8 KiB, kept up to CACHE_DEPTH
// per size) on a free list
// of the thread that freed them; a thread's lists are returned to malloc when
// it exits. A block may be freed by another thread than the one that
// allocated it: it joins the freeing thread's list.
#include "CInterop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16                       // keeps malloc's 16-byte alignment
#define SMALL_LIMIT 1024                // up to here: 16-byte classes
#define SMALL_BYTES 16
#define SMALL_CLASSES (SMALL_LIMIT / SMALL_BYTES)
#define SMALL_DEPTH 32
#define CLASS_BYTES 256                 // above: 256-byte classes
#define CACHED_LIMIT 8192               // above: plain malloc
#define CLASSES (SMALL_CLASSES + (CACHED_LIMIT - SMALL_LIMIT) / CLASS_BYTES)
#define CACHE_DEPTH 16

typedef struct FreeBlock { struct FreeBlock *next; } FreeBlock;

typedef struct {
    FreeBlock *heads[CLASSES];
    unsigned char counts[CLASSES];
    int registered;
} ThreadCache;

static __thread ThreadCache cache;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void drain(void *unused) {
    (void)unused;
    for (int c = 0; c < CLASSES; c++) {
        FreeBlock *block = cache.heads[c];
        while (block) {
            FreeBlock *next = block->next;
            free(block);
            block = next;
        }
        cache.heads[c] = NULL;
        cache.counts[c] = 0;
    }
}

static void make_exit_key(void) {
    // On failure, caches are simply not drained at thread exit (bounded).
    (void)pthread_key_create(&exit_key, drain);
}

static int round_up(int n) {
    if (n <= SMALL_LIMIT) return (n + SMALL_BYTES - 1) & ~(SMALL_BYTES - 1);
    if (n <= CACHED_LIMIT) return (n + CLASS_BYTES - 1) & ~(CLASS_BYTES - 1);
    return (n + 7) & ~7;
}

static int class_of(int size) {
    if (size <= SMALL_LIMIT) return size / SMALL_BYTES - 1;
    if (size <= CACHED_LIMIT) return SMALL_CLASSES + (size - SMALL_LIMIT) / CLASS_BYTES - 1;
    return -1;
}

static int depth_of(int c) { return c < SMALL_CLASSES ? SMALL_DEPTH : CACHE_DEPTH; }

static void *mem_malloc(int n) {
    if (n <= 0) n = 1;
    int size = round_up(n);
    int c = class_of(size);
    unsigned char *base = NULL;
    if (c >= 0 && cache.heads[c]) {
        FreeBlock *block = cache.heads[c];
        cache.heads[c] = block->next;
        cache.counts[c]--;
        base = (unsigned char *)block;
    } else {
        base = malloc((size_t)size + HEADER);
        if (!base) return NULL;
    }
    memcpy(base, &size, sizeof size);
    return base + HEADER;
}

static void mem_free(void *p) {
    if (!p) return;
    unsigned char *base = (unsigned char *)p - HEADER;
    int size;
    memcpy(&size, base, sizeof size);
    int c = class_of(size);
    if (c >= 0 && cache.counts[c] < depth_of(c)) {
        if (!cache.registered) {
            cache.registered = 1;
            pthread_once(&exit_key_once, make_exit_key);
            // Any non-NULL value makes the destructor run at thread exit.
            (void)pthread_setspecific(exit_key, &cache);
        }
        FreeBlock *block = (FreeBlock *)base;
        block->next = cache.heads[c];
        cache.heads[c] = block;
        cache.counts[c]++;
        return;
    }
    free(base);
}

static int mem_size(void *p) {
    if (!p) return 0;
    int size;
    memcpy(&size, (unsigned char *)p - HEADER, sizeof size);
    return size;
}

static void *mem_realloc(void *p, int n) {
    if (!p) return mem_malloc(n);
    int old = mem_size(p);
    if (round_up(n) <= old && class_of(old) == class_of(round_up(n))) return p;
    void *fresh = mem_malloc(n);
    if (!fresh) return NULL;
    memcpy(fresh, p, (size_t)(old < n ? old : n));
    mem_free(p);
    return fresh;
}

static int mem_roundup(int n) { return round_up(n); }
static int mem_init(void *unused) { (void)unused; return SQLITE_OK; }
static void mem_shutdown(void *unused) { (void)unused; }

int cinterop_sqlite_use_thread_cache_allocator(void) {
    static const sqlite3_mem_methods methods = {
        mem_malloc, mem_free, mem_realloc, mem_size, mem_roundup, mem_init, mem_shutdown, NULL,
    };
    return sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
}
