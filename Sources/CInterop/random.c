// Buffered getrandom(2) output per thread (see CInterop.h).
#include "CInterop.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#define RANDOM_BUFFER_BYTES 4096

static __thread unsigned char random_buffer[RANDOM_BUFFER_BYTES];
static __thread size_t random_left;

static int refill(void) {
    size_t filled = 0;
    while (filled < RANDOM_BUFFER_BYTES) {
        ssize_t got = getrandom(random_buffer + filled, RANDOM_BUFFER_BYTES - filled, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        filled += (size_t)got;
    }
    random_left = RANDOM_BUFFER_BYTES;
    return 0;
}

int cinterop_random_bytes(void *bytes, size_t count) {
    if (count > RANDOM_BUFFER_BYTES) {
        errno = EINVAL;
        return -1;
    }
    if (random_left < count && refill() != 0) return -1;
    unsigned char *next = random_buffer + RANDOM_BUFFER_BYTES - random_left;
    memcpy(bytes, next, count);
    memset(next, 0, count);  // handed out once, then forgotten
    random_left -= count;
    return 0;
}
