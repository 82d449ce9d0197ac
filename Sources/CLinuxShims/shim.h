#ifndef PREFLIGHT_CLINUXSHIMS_H
#define PREFLIGHT_CLINUXSHIMS_H
// Linux headers that Swift's Glibc module does not bring in.
#include <sys/eventfd.h>
#endif
