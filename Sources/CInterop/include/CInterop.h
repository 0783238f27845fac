// The one thin C-interop module: system headers Swift imports, and static
// inline shims (prefixed `cinterop_`) for what Swift cannot import directly
// (function-like macros, variadic calls), and the per-call bump arena
// (arena.c) protobuf-c decodes into.
#ifndef HERALD_CINTEROP_H
#define HERALD_CINTEROP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/random.h>

#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rand.h>
#include <openssl/pkcs12.h>
#include <sqlite3.h>
#include <zlib.h>

// Debian 12 ships nghttp2 1.52: the ssize_t API is the one to use.
_Static_assert(NGHTTP2_VERSION_NUM >= 0x013400, "nghttp2 >= 1.52 required");

// --- OpenSSL macros ---------------------------------------------------------

static inline int cinterop_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int cinterop_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline long cinterop_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline long cinterop_SSL_CTX_set_options(SSL_CTX *ctx, long options) {
    return (long)SSL_CTX_set_options(ctx, (uint64_t)options);
}

static inline int cinterop_BIO_pending(BIO *bio) {
    return (int)BIO_ctrl_pending(bio);
}

static inline int cinterop_BIO_set_mem_eof_return(BIO *bio, int value) {
    return (int)BIO_set_mem_eof_return(bio, value);
}

static inline int cinterop_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}

// --- zlib macros ------------------------------------------------------------

/// `inflateInit2` is a macro (it passes the library version and struct size).
static inline int cinterop_inflateInit2(z_stream *stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

/// `deflateInit2` likewise (tests compress with it).
static inline int cinterop_deflateInit2(z_stream *stream, int level, int windowBits) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}

// --- SQLite macros ----------------------------------------------------------

/// SQLITE_TRANSIENT is a cast of -1 to a function pointer; Swift cannot
/// import it.
static inline sqlite3_destructor_type cinterop_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Turns off SQLite's memory statistics (a global mutex on every
/// allocation). `sqlite3_config` is variadic, which Swift cannot call; it
/// must run before SQLite initializes, and is ignored (SQLITE_MISUSE) after.
static inline int cinterop_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// Makes SQLite allocate through a per-thread cache of 1–8 KiB blocks in
/// front of malloc (sqlite_memory.c). Before SQLite initializes, like
/// `cinterop_sqlite_disable_memstatus`; SQLITE_MISUSE after.
int cinterop_sqlite_use_thread_cache_allocator(void);

/// Puts a thin wrapper around SQLite's default page cache that skips the
/// whole-cache walk pcache1 makes at commits after a b-tree swap parked a
/// page under the lock page's number (sqlite_pcache.c). Before SQLite
/// initializes, like the two above; SQLITE_MISUSE after.
int cinterop_sqlite_use_bounded_page_cache(void);

/// The wrapper's methods once installed (NULL before: SQLite runs pcache1
/// alone), and how many of one
/// of its caches' truncates it passed on to pcache1 and skipped (tests).
const sqlite3_pcache_methods2 *cinterop_sqlite_bounded_page_cache(void);
void cinterop_sqlite_bounded_page_cache_truncates(sqlite3_pcache *cache, unsigned long *passed, unsigned long *skipped);

/// Row changes of one table, as SQLite's pre-update hook reports them
/// (sqlite_changes.c): the old and new values of chosen columns of every
/// UPDATE that changes one of the watched columns, and the old values of
/// every DELETE (INSERTs are not kept). The store's writer turns them into
/// its derived rows (counts, events) instead of per-row triggers.
typedef struct cinterop_row_changes cinterop_row_changes;

/// One kept value: `type` SQLITE_INTEGER, SQLITE_TEXT or SQLITE_NULL (a
/// REAL or BLOB is kept as NULL); `integer` the integer; `text`, `length`
/// the text (valid until the changes are cleared).
typedef struct {
    int type;
    sqlite3_int64 integer;
    const unsigned char *text;
    int length;
} cinterop_row_value;

/// Starts keeping the changes of `table` on `db`: `columns[i]` is a column
/// index in the table (as `PRAGMA table_info` numbers them), `watched` a
/// bit mask over `i` (an UPDATE is kept only when one of those differs).
/// At most 64 columns. NULL when out of memory or `count` is too large.
/// Replaces any pre-update hook `db` had.
cinterop_row_changes *cinterop_row_changes_install(sqlite3 *db, const char *table, const int *columns, int count,
                                                   unsigned long long watched);
/// Removes the hook from `db` and frees what was kept.
void cinterop_row_changes_remove(cinterop_row_changes *changes, sqlite3 *db);
/// Changes kept since the last clear; -1 when one could not be kept (out
/// of memory): the transaction must then not commit.
int cinterop_row_changes_count(const cinterop_row_changes *changes);
/// SQLITE_UPDATE or SQLITE_DELETE, and the rowid, of change `index`.
int cinterop_row_changes_op(const cinterop_row_changes *changes, int index);
sqlite3_int64 cinterop_row_changes_rowid(const cinterop_row_changes *changes, int index);
/// Value `column` (an index into the install's `columns`) of change
/// `index`, before (`after` 0) or after (1; NULL for a DELETE).
cinterop_row_value cinterop_row_changes_value(const cinterop_row_changes *changes, int index, int after, int column);
/// Forgets every kept change (and the failure, if any).
void cinterop_row_changes_clear(cinterop_row_changes *changes);

// --- Threads ------------------------------------------------------------------

#if defined(__linux__)
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// Names the calling thread (Linux keeps 15 bytes). `pthread_setname_np`
/// needs _GNU_SOURCE and `prctl` is variadic; neither imports into Swift.
static inline void cinterop_set_current_thread_name(const char *name) {
#if defined(__linux__)
    (void)prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
#else
    (void)name;
#endif
}

#if defined(__GLIBC__)
#include <malloc.h>
#endif

/// Pins glibc's mmap threshold at `bytes` (and so turns off its dynamic
/// raising); `M_MMAP_THRESHOLD` and `mallopt` are not in Swift's Glibc
/// module. Returns 1 on success, as mallopt does (1 elsewhere: nothing to do).
static inline int cinterop_pin_mmap_threshold(int bytes) {
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, bytes);
#else
    (void)bytes;
    return 1;
#endif
}

/// Lowers the calling thread's scheduling priority to `niceness` (Linux
/// applies setpriority to one thread when given its tid; `syscall` is variadic
/// and does not import). Returns 0, or -1 with errno set.
static inline int cinterop_set_current_thread_niceness(int niceness) {
#if defined(__linux__)
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), niceness);
#else
    (void)niceness;
    return 0;
#endif
}

// --- Bump arena (Sources/CInterop/arena.c) ----------------------------------

/// Bytes of the per-thread arena's block: a typical request's protobuf-c
/// structs and its reply fit; what does not fit is malloc'd and freed at the
/// reset, so the block never grows.
#define CINTEROP_ARENA_CAPACITY (32 * 1024)

/// A bump allocator with a fixed block, usable as a protobuf-c allocator:
/// `free` is a no-op, and everything is released by `cinterop_arena_reset`.
typedef struct cinterop_arena {
    /// Pass to protobuf_c_message_unpack; never free the message with it.
    ProtobufCAllocator allocator;
    size_t capacity;
    size_t used;
    /// Allocations that did not fit in the block, since creation (for tests).
    size_t overflow_allocations;
    struct cinterop_arena_overflow *overflow;
    int in_use;
    int thread_owned;
    _Alignas(max_align_t) unsigned char block[];
} cinterop_arena;

/// A new arena with a `capacity`-byte block; NULL when out of memory.
cinterop_arena *cinterop_arena_create(size_t capacity);
/// Frees the arena and everything allocated from it (NULL: nothing).
void cinterop_arena_destroy(cinterop_arena *arena);
/// `size` bytes aligned for any type, from the block or (past it) from
/// malloc; NULL when out of memory.
void *cinterop_arena_alloc(cinterop_arena *arena, size_t size);
/// Releases every allocation: the block is reused, overflow is freed.
void cinterop_arena_reset(cinterop_arena *arena);
/// The calling thread's arena (created on first use), or a private one when
/// the thread's is already in use; NULL when out of memory. Pair with
/// `cinterop_arena_release` on the same thread.
cinterop_arena *cinterop_arena_acquire(void);
/// Resets a thread's arena for the next call, or destroys a private one.
void cinterop_arena_release(cinterop_arena *arena);

// --- Random bytes (Sources/CInterop/random.c) ---------------------------------

/// Copies `count` (at most 4096) bytes of getrandom(2) output into `bytes`,
/// from a per-thread buffer refilled 4096 bytes at a time (one system call per
/// 256 UUIDs); bytes handed out are zeroed in the
/// buffer. Not fork-safe: a forked child would repeat its parent's bytes
/// (Herald never forks). Returns 0, or -1 with errno set.
int cinterop_random_bytes(void *bytes, size_t count);

// --- CPUs (Sources/CInterop/cpus.c) ---------------------------------------------

/// How many CPUs the calling thread may run on (sched_getaffinity(2): what
/// `taskset` or a cpuset allows), or -1 with errno set.
int cinterop_affinity_cpu_count(void);

#endif
