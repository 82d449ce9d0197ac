/*
 * vg_sigsuspend.so: lets valgrind 3.19 (Debian bookworm) run preflightd for `tools/bench --profile`.
 *
 * libdispatch parks the main thread in sigsuspend() with a signal mask that lives in read-only memory;
 * valgrind's rt_sigsuspend wrapper edits the mask in place and dies of SIGSEGV. This preload passes a
 * copy on the stack instead. It changes nothing else and is used only under valgrind.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

int sigsuspend(const sigset_t *mask) {
    static int (*real)(const sigset_t *);
    if (!real) real = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    sigset_t copy = *mask;
    return real(&copy);
}
