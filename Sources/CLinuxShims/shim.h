#ifndef PREFLIGHT_CLINUXSHIMS_H
#define PREFLIGHT_CLINUXSHIMS_H
// Linux headers that Swift's Glibc module does not bring in.
#include <sys/eventfd.h>
#include <pthread.h>

// pthread_setname_np and pthread_getname_np are GNU extensions that Glibc's Swift module does not expose
// without _GNU_SOURCE.
extern int pthread_setname_np(pthread_t thread, const char *name);
extern int pthread_getname_np(pthread_t thread, char *name, size_t length);

static inline int preflight_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}
#endif
