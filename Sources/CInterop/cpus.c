// The CPUs this process may run on (see CInterop.h).
#define _GNU_SOURCE
#include "CInterop.h"

#include <errno.h>
#include <sched.h>

int cinterop_affinity_cpu_count(void) {
    // Machines with more CPUs than a cpu_set_t holds (1024): grow the set.
    for (int cpus = CPU_SETSIZE; cpus <= (1 << 16); cpus *= 4) {
        cpu_set_t *set = CPU_ALLOC(cpus);
        if (set == NULL) return -1;
        size_t size = CPU_ALLOC_SIZE(cpus);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        int failure = errno;
        CPU_FREE(set);
        if (failure != EINVAL) {
            errno = failure;
            return -1;
        }
    }
    errno = EINVAL;
    return -1;
}
