// LD_PRELOADed into a Swift binary run under valgrind 3.19 by
// bench/engine-instructions.sh. libdispatch's main thread, once main() has
// handed over to dispatch, waits in sigsuspend() on a `static const` mask;
// valgrind rewrites the mask it is given in place and dies (SIGSEGV) on the
// read-only page. This sigsuspend passes a writable copy.
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (long)(_NSIG / 8));
}
