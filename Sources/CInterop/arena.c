// A bump arena for protobuf-c (see CInterop.h): one block per thread, reset
// once per call; allocations past the block go to malloc and are freed at
// the reset.
#include "CInterop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/// A malloc'd allocation past the block: a header, then the caller's bytes.
struct cinterop_arena_overflow {
    struct cinterop_arena_overflow *next;
    max_align_t align[];
};

static void *arena_protobuf_alloc(void *data, size_t size) {
    return cinterop_arena_alloc((cinterop_arena *)data, size);
}

static void arena_protobuf_free(void *data, void *pointer) {
    // Everything is released at once by cinterop_arena_reset.
    (void)data;
    (void)pointer;
}

cinterop_arena *cinterop_arena_create(size_t capacity) {
    cinterop_arena *arena = malloc(sizeof(cinterop_arena) + capacity);
    if (arena == NULL) return NULL;
    memset(arena, 0, sizeof(cinterop_arena));
    arena->allocator.alloc = arena_protobuf_alloc;
    arena->allocator.free = arena_protobuf_free;
    arena->allocator.allocator_data = arena;
    arena->capacity = capacity;
    return arena;
}

void cinterop_arena_destroy(cinterop_arena *arena) {
    if (arena == NULL) return;
    cinterop_arena_reset(arena);
    free(arena);
}

void *cinterop_arena_alloc(cinterop_arena *arena, size_t size) {
    const size_t align = _Alignof(max_align_t);
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded >= size && rounded <= arena->capacity - arena->used) {
        void *pointer = arena->block + arena->used;
        arena->used += rounded;
        return pointer;
    }
    if (size > SIZE_MAX - sizeof(struct cinterop_arena_overflow)) return NULL;
    struct cinterop_arena_overflow *overflow = malloc(sizeof(struct cinterop_arena_overflow) + size);
    if (overflow == NULL) return NULL;
    overflow->next = arena->overflow;
    arena->overflow = overflow;
    arena->overflow_allocations += 1;
    return overflow->align;
}

void cinterop_arena_reset(cinterop_arena *arena) {
    struct cinterop_arena_overflow *overflow = arena->overflow;
    while (overflow != NULL) {
        struct cinterop_arena_overflow *next = overflow->next;
        free(overflow);
        overflow = next;
    }
    arena->overflow = NULL;
    arena->used = 0;
}

// --- One arena per thread -----------------------------------------------------

static pthread_key_t thread_arena_key;
static pthread_once_t thread_arena_once = PTHREAD_ONCE_INIT;
static int thread_arena_key_status = -1;

static void thread_arena_destructor(void *arena) {
    cinterop_arena_destroy((cinterop_arena *)arena);
}

static void thread_arena_make_key(void) {
    thread_arena_key_status = pthread_key_create(&thread_arena_key, thread_arena_destructor);
}

cinterop_arena *cinterop_arena_acquire(void) {
    if (pthread_once(&thread_arena_once, thread_arena_make_key) != 0 || thread_arena_key_status != 0) {
        return cinterop_arena_create(CINTEROP_ARENA_CAPACITY);  // no thread slot: a private one
    }
    cinterop_arena *arena = pthread_getspecific(thread_arena_key);
    if (arena == NULL) {
        arena = cinterop_arena_create(CINTEROP_ARENA_CAPACITY);
        if (arena == NULL) return NULL;
        if (pthread_setspecific(thread_arena_key, arena) != 0) return arena;  // stays private
        arena->thread_owned = 1;
    }
    if (arena->in_use) {
        // Nested use on one thread: a private arena, destroyed on release.
        return cinterop_arena_create(CINTEROP_ARENA_CAPACITY);
    }
    arena->in_use = 1;
    return arena;
}

void cinterop_arena_release(cinterop_arena *arena) {
    if (arena == NULL) return;
    if (arena->thread_owned) {
        cinterop_arena_reset(arena);
        arena->in_use = 0;
    } else {
        cinterop_arena_destroy(arena);
    }
}
