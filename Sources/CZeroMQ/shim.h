#ifndef PREFLIGHT_CZEROMQ_SHIM_H
#define PREFLIGHT_CZEROMQ_SHIM_H
#include <zmq.h>
#endif
