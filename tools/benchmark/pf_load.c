/*
 * pf-load: the load client of tools/bench, in C on libzmq so that the client's own cost stays far
 * below the ~85 us round trip it measures (a Python client would swamp it).
 *
 *   pf-load latency    ENDPOINT BODIES -n N [-w WARMUP] [-e EXPECT] [-t TIMEOUT_MS]
 *       One REQ socket, N sequential round trips after WARMUP unmeasured ones.
 *   pf-load pair       REFERENCE MEASURED BODIES -n N [-w WARMUP] [-k BLOCK] [-e EXPECT] [-t TIMEOUT_MS]
 *       Two REQ sockets, N round trips on each after WARMUP unmeasured ones, in alternating blocks of BLOCK
 *       (default 500): both endpoints meet the same moments of a shared machine, where two runs one after the
 *       other meet different ones. Prints {"reference": <latencies>, "measured": <latencies>}.
 *   pf-load throughput ENDPOINT BODIES -c CLIENTS -W WINDOW -s SECONDS [-u WARMUP_S] [-e EXPECT] [-m ready|sweep]
 *       CLIENTS DEALER sockets driven by one thread, each keeping WINDOW requests in flight;
 *       replies received inside the measured window are counted. -m: which sockets a pass receives from
 *       (run_throughput says; ready is the default).
 *   pf-load http       HOST:PORT PATH BODIES -n N [-w WARMUP] [-e EXPECT]
 *       One keep-alive TCP connection, N sequential HTTP/1.1 POSTs of application/json (a minimal
 *       hand-written client: one write per request, Content-Length framed responses).
 *
 * BODIES is a file with one request body per line, used in turn. In a body, "@@@@@@@@@@" (ten @) is
 * replaced by a zero-padded request counter, so ids are unique without changing the size.
 * A reply that does not contain EXPECT counts as an error. Results go to stdout as one JSON object;
 * latencies in microseconds, percentiles by nearest rank.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define ID_MARK "@@@@@@@@@@"
#define ID_WIDTH 10

typedef struct {
    char *bytes;
    size_t length;
    long id_offset; /* -1: no id mark */
} body_t;

typedef struct {
    body_t *items;
    size_t count;
    size_t next;
    uint64_t counter;
} bodies_t;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
    printf("{\"error\":\"%s: %s\"}\n", what, zmq_strerror(zmq_errno()));
    fflush(stdout);
    exit(2);
}

static bodies_t load_bodies(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        exit(2);
    }
    bodies_t bodies = {0};
    size_t capacity = 0;
    char *line = NULL;
    size_t line_capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &line_capacity, file)) >= 0) {
        while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) length--;
        if (length == 0) continue;
        if (bodies.count == capacity) {
            capacity = capacity ? capacity * 2 : 16;
            bodies.items = realloc(bodies.items, capacity * sizeof(body_t));
        }
        body_t *body = &bodies.items[bodies.count++];
        body->bytes = malloc((size_t)length);
        memcpy(body->bytes, line, (size_t)length);
        body->length = (size_t)length;
        char *mark = memmem(body->bytes, body->length, ID_MARK, ID_WIDTH);
        body->id_offset = mark ? mark - body->bytes : -1;
    }
    free(line);
    fclose(file);
    if (bodies.count == 0) {
        fprintf(stderr, "pf-load: %s has no bodies\n", path);
        exit(2);
    }
    return bodies;
}

/* The next body, with its id mark overwritten by the request counter. */
static body_t *next_body(bodies_t *bodies) {
    body_t *body = &bodies->items[bodies->next];
    bodies->next = (bodies->next + 1) % bodies->count;
    if (body->id_offset >= 0) {
        uint64_t value = bodies->counter++;
        char *digits = body->bytes + body->id_offset;
        for (int i = ID_WIDTH - 1; i >= 0; i--) {
            digits[i] = (char)('0' + value % 10);
            value /= 10;
        }
    }
    return body;
}

static int contains(const char *haystack, size_t length, const char *needle, size_t needle_length) {
    return needle_length == 0 || memmem(haystack, length, needle, needle_length) != NULL;
}

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double rank(const uint64_t *sorted, size_t n, double percent) {
    size_t index = (size_t)((percent / 100.0) * (double)n + 0.999999999);
    if (index < 1) index = 1;
    if (index > n) index = n;
    return (double)sorted[index - 1] / 1000.0;
}

/* The latencies' JSON object, without a newline. */
static void print_latency_object(const char *mode, uint64_t *samples, size_t n, uint64_t errors, const char *extra) {
    qsort(samples, n, sizeof *samples, compare_u64);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)samples[i];
    printf("{\"mode\":\"%s\",\"n\":%zu,\"errors\":%llu,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,"
           "\"min\":%.3f,\"max\":%.3f,\"mean\":%.3f%s,\"percentiles\":{",
           mode, n, (unsigned long long)errors, rank(samples, n, 50), rank(samples, n, 90), rank(samples, n, 99),
           rank(samples, n, 99.9), (double)samples[0] / 1000.0, (double)samples[n - 1] / 1000.0,
           sum / (double)n / 1000.0, extra ? extra : "");
    for (int p = 1; p <= 99; p++) printf("\"%d\":%.3f,", p, rank(samples, n, p));
    printf("\"99.9\":%.3f,\"99.99\":%.3f,\"100\":%.3f}}", rank(samples, n, 99.9), rank(samples, n, 99.99),
           rank(samples, n, 100));
}

static void print_latencies(const char *mode, uint64_t *samples, size_t n, uint64_t errors, const char *extra) {
    print_latency_object(mode, samples, n, errors, extra);
    printf("\n");
}

typedef struct {
    long n, warmup, clients, window, timeout_ms, block;
    int sweep_all; /* throughput: try every socket each pass (-m sweep) instead of the ready ones (-m ready) */
    double seconds, warmup_seconds;
    const char *expect;
    size_t expect_length;
} options_t;

static void parse_options(int argc, char **argv, int first, options_t *options) {
    for (int i = first; i < argc; i++) {
        const char *flag = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "pf-load: %s needs a value\n", flag);
            exit(64);
        }
        const char *value = argv[++i];
        if (!strcmp(flag, "-n")) options->n = atol(value);
        else if (!strcmp(flag, "-w")) options->warmup = atol(value);
        else if (!strcmp(flag, "-c")) options->clients = atol(value);
        else if (!strcmp(flag, "-W")) options->window = atol(value);
        else if (!strcmp(flag, "-s")) options->seconds = atof(value);
        else if (!strcmp(flag, "-u")) options->warmup_seconds = atof(value);
        else if (!strcmp(flag, "-t")) options->timeout_ms = atol(value);
        else if (!strcmp(flag, "-k")) options->block = atol(value);
        else if (!strcmp(flag, "-e")) options->expect = value;
        else if (!strcmp(flag, "-m") && !strcmp(value, "sweep")) options->sweep_all = 1;
        else if (!strcmp(flag, "-m") && !strcmp(value, "ready")) options->sweep_all = 0;
        else {
            fprintf(stderr, "pf-load: unknown option %s\n", flag);
            exit(64);
        }
    }
    options->expect_length = options->expect ? strlen(options->expect) : 0;
}

/* ---- latency: REQ, one round trip at a time ---------------------------------------------- */

static void *connect_req(void *context, const char *endpoint, options_t *o) {
    void *socket = zmq_socket(context, ZMQ_REQ);
    int linger = 0, timeout = (int)o->timeout_ms;
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    if (zmq_connect(socket, endpoint) != 0) fail("connect");
    return socket;
}

/* One round trip on a REQ socket: its nanoseconds; a reply without EXPECT counts in *errors. */
static uint64_t round_trip(void *socket, bodies_t *bodies, zmq_msg_t *reply, options_t *o, uint64_t *errors) {
    body_t *body = next_body(bodies);
    uint64_t start = now_ns();
    if (zmq_send(socket, body->bytes, body->length, 0) < 0) fail("send");
    if (zmq_msg_recv(reply, socket, 0) < 0) fail(zmq_errno() == EAGAIN ? "receive timed out" : "receive");
    uint64_t end = now_ns();
    if (!contains(zmq_msg_data(reply), zmq_msg_size(reply), o->expect, o->expect_length)) (*errors)++;
    return end - start;
}

static int run_latency(const char *endpoint, bodies_t *bodies, options_t *o) {
    void *context = zmq_ctx_new();
    void *socket = connect_req(context, endpoint, o);
    uint64_t *samples = malloc((size_t)o->n * sizeof(uint64_t));
    uint64_t errors = 0;
    zmq_msg_t reply;
    zmq_msg_init(&reply);
    for (long i = -o->warmup; i < o->n; i++) {
        uint64_t elapsed = round_trip(socket, bodies, &reply, o, &errors);
        if (i >= 0) samples[i] = elapsed;
    }
    zmq_msg_close(&reply);
    print_latencies("latency", samples, (size_t)o->n, errors, NULL);
    zmq_close(socket);
    zmq_ctx_term(context);
    return 0;
}

/* ---- pair: two REQ sockets, alternating blocks of round trips ---------------------------- */

static int run_pair(const char *reference, const char *measured, bodies_t *bodies, options_t *o) {
    void *context = zmq_ctx_new();
    void *sockets[2] = {connect_req(context, reference, o), connect_req(context, measured, o)};
    uint64_t *samples[2] = {malloc((size_t)o->n * sizeof(uint64_t)), malloc((size_t)o->n * sizeof(uint64_t))};
    uint64_t errors[2] = {0, 0};
    long taken[2] = {0, 0};
    long block = o->block > 0 ? o->block : 500;
    zmq_msg_t reply;
    zmq_msg_init(&reply);
    uint64_t ignored = 0;
    for (int side = 0; side < 2; side++)
        for (long i = 0; i < o->warmup; i++) round_trip(sockets[side], bodies, &reply, o, &ignored);
    for (int side = 0; taken[0] < o->n || taken[1] < o->n; side ^= 1) {
        for (long i = 0; i < block && taken[side] < o->n; i++) {
            uint64_t elapsed = round_trip(sockets[side], bodies, &reply, o, &errors[side]);
            samples[side][taken[side]++] = elapsed;
        }
    }
    zmq_msg_close(&reply);
    printf("{\"mode\":\"pair\",\"block\":%ld,\"reference\":", block);
    print_latency_object("latency", samples[0], (size_t)o->n, errors[0], NULL);
    printf(",\"measured\":");
    print_latency_object("latency", samples[1], (size_t)o->n, errors[1], NULL);
    printf("}\n");
    zmq_close(sockets[0]);
    zmq_close(sockets[1]);
    zmq_ctx_term(context);
    return 0;
}

/* The process's CPU time so far, every thread (libzmq's I/O thread too), user and system. */
static double process_cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/* ---- throughput: DEALERs pipelining ------------------------------------------------------- */

static int run_throughput(const char *endpoint, bodies_t *bodies, options_t *o) {
    void *context = zmq_ctx_new();
    long k = o->clients;
    void **sockets = calloc((size_t)k, sizeof(void *));
    long *in_flight = calloc((size_t)k, sizeof(long));
    zmq_pollitem_t *items = calloc((size_t)k, sizeof(zmq_pollitem_t));
    for (long i = 0; i < k; i++) {
        sockets[i] = zmq_socket(context, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(sockets[i], ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_connect(sockets[i], endpoint) != 0) fail("connect");
        items[i].socket = sockets[i];
        items[i].events = ZMQ_POLLIN;
    }
    /* Which sockets may have replies. -m ready (the default): a socket is tried only from when libzmq
     * signals its command mailbox (ZMQ_FD, in one epoll set) until a receive finds nothing, as an event loop
     * over many sockets would; that last receive has processed every command, so the next reply signals
     * again. -m sweep: every socket every pass, a receive that finds nothing each (about 800 instructions:
     * a getpid and a poll in libzmq), and zmq_poll over all of them when a pass finds none; its cost then
     * grows with how thinly replies are spread over the sockets, which the server under test decides. */
    char *maybe = calloc((size_t)k, 1);
    struct epoll_event *events = calloc((size_t)k, sizeof(struct epoll_event));
    int epoll_fd = -1;
    uint64_t fallback_finds = 0;
    for (long i = 0; i < k; i++) maybe[i] = 1;
    if (!o->sweep_all) {
        epoll_fd = epoll_create1(0);
        if (epoll_fd < 0) fail("epoll_create1");
        for (long i = 0; i < k; i++) {
            int fd;
            size_t size = sizeof fd;
            if (zmq_getsockopt(sockets[i], ZMQ_FD, &fd, &size) != 0) fail("ZMQ_FD");
            struct epoll_event event = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
            if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) fail("epoll_ctl");
        }
    }
    int after_timeout = 0;
    uint64_t start = now_ns();
    uint64_t measure_from = start + (uint64_t)(o->warmup_seconds * 1e9);
    uint64_t measure_until = measure_from + (uint64_t)(o->seconds * 1e9);
    uint64_t counted = 0, total = 0, errors = 0, sent = 0;
    for (long i = 0; i < k; i++) {
        for (long w = 0; w < o->window; w++) {
            body_t *body = next_body(bodies);
            if (zmq_send(sockets[i], "", 0, ZMQ_SNDMORE) < 0 || zmq_send(sockets[i], body->bytes, body->length, 0) < 0)
                fail("send");
            in_flight[i]++;
            sent++;
        }
    }
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    uint64_t drain_deadline = 0;
    long outstanding = k * o->window;
    while (outstanding > 0) {
        int progress = 0;
        uint64_t now = now_ns();
        int sending = now < measure_until;
        if (!sending && drain_deadline == 0) drain_deadline = now + 10ull * 1000000000ull;
        if (drain_deadline && now > drain_deadline) break;
        for (long i = 0; i < k; i++) {
            if (!maybe[i]) continue;
            /* At most 64 replies from one socket per pass, so every client is served in turn. */
            for (int turn = 0; turn < 64 && in_flight[i] > 0; turn++) {
                if (zmq_msg_recv(&frame, sockets[i], ZMQ_DONTWAIT) < 0) {
                    if (zmq_errno() != EAGAIN) fail("receive");
                    if (!o->sweep_all) maybe[i] = 0;
                    break;
                }
                if (after_timeout) fallback_finds++;
                /* [empty][body]: read frames up to the last one. */
                while (zmq_msg_more(&frame)) {
                    if (zmq_msg_recv(&frame, sockets[i], 0) < 0) fail("receive");
                }
                uint64_t at = now_ns();
                progress = 1;
                total++;
                in_flight[i]--;
                outstanding--;
                if (!contains(zmq_msg_data(&frame), zmq_msg_size(&frame), o->expect, o->expect_length)) errors++;
                if (at >= measure_from && at < measure_until) counted++;
                if (at < measure_until) {
                    body_t *body = next_body(bodies);
                    if (zmq_send(sockets[i], "", 0, ZMQ_SNDMORE) < 0 ||
                        zmq_send(sockets[i], body->bytes, body->length, 0) < 0)
                        fail("send");
                    in_flight[i]++;
                    outstanding++;
                    sent++;
                }
            }
        }
        after_timeout = 0;
        if (o->sweep_all) {
            if (!progress && zmq_poll(items, (int)k, 10) < 0 && zmq_errno() != EINTR) fail("poll");
        } else {
            /* Every pass picks up the sockets signalled since, without waiting while there is work. */
            int n = epoll_wait(epoll_fd, events, (int)k, progress ? 0 : 10);
            if (n < 0 && errno != EINTR) fail("epoll_wait");
            for (int e = 0; e < n; e++) maybe[events[e].data.u64] = 1;
            if (n == 0 && !progress) {
                /* 10 ms without a signal: try them all once. A reply found so is a signal missed, counted. */
                for (long i = 0; i < k; i++) maybe[i] = 1;
                after_timeout = 1;
            }
        }
    }
    zmq_msg_close(&frame);
    double seconds = (double)(measure_until - measure_from) / 1e9;
    printf("{\"mode\":\"throughput\",\"clients\":%ld,\"window\":%ld,\"seconds\":%.3f,\"replies\":%llu,"
           "\"total\":%llu,\"sent\":%llu,\"lost\":%ld,\"errors\":%llu,\"rps\":%.1f,\"sockets\":\"%s\","
           "\"missed_signals\":%llu,\"cpu_seconds\":%.4f}\n",
           k, o->window, seconds, (unsigned long long)counted, (unsigned long long)total,
           (unsigned long long)sent, outstanding, (unsigned long long)errors, (double)counted / seconds,
           o->sweep_all ? "sweep" : "ready", (unsigned long long)fallback_finds, process_cpu_seconds());
    if (epoll_fd >= 0) close(epoll_fd);
    free(maybe);
    free(events);
    for (long i = 0; i < k; i++) zmq_close(sockets[i]);
    zmq_ctx_term(context);
    return outstanding > 0 ? 3 : 0;
}

/* ---- http: what an app does without the agent ------------------------------------------- */

static int http_connect(const char *host, const char *port) {
    struct addrinfo hints = {0}, *found;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &found) != 0) {
        fprintf(stderr, "pf-load: cannot resolve %s:%s\n", host, port);
        exit(2);
    }
    int fd = socket(found->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
        perror("connect");
        exit(2);
    }
    freeaddrinfo(found);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Reads one response; returns the status (0 when the peer closed), the body in buffer[*body_at..]. */
static int http_read_response(int fd, char **buffer, size_t *capacity, size_t *body_at, size_t *body_length) {
    size_t have = 0;
    long header_end = -1, content_length = -1;
    for (;;) {
        if (have + 4096 > *capacity) {
            *capacity = (*capacity + 4096) * 2;
            *buffer = realloc(*buffer, *capacity);
        }
        if (header_end >= 0 && content_length >= 0 && have >= (size_t)header_end + (size_t)content_length) break;
        ssize_t got = read(fd, *buffer + have, *capacity - have - 1);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            return 0;
        }
        have += (size_t)got;
        (*buffer)[have] = 0;
        if (header_end < 0) {
            char *end = memmem(*buffer, have, "\r\n\r\n", 4);
            if (!end) continue;
            header_end = end - *buffer + 4;
            for (char *line = strstr(*buffer, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
                if (strncasecmp(line + 2, "content-length:", 15) == 0) content_length = atol(line + 17);
            }
            if (content_length < 0) content_length = 0;
        }
    }
    *body_at = (size_t)header_end;
    *body_length = (size_t)content_length;
    int status = 0;
    sscanf(*buffer, "HTTP/1.%*d %d", &status);
    return status;
}

static int run_http(const char *address, const char *path, bodies_t *bodies, options_t *o) {
    char host[256];
    const char *colon = strrchr(address, ':');
    if (!colon || (size_t)(colon - address) >= sizeof host) {
        fprintf(stderr, "pf-load: http needs HOST:PORT\n");
        return 64;
    }
    memcpy(host, address, (size_t)(colon - address));
    host[colon - address] = 0;
    const char *port = colon + 1;
    int fd = http_connect(host, port);
    uint64_t *samples = malloc((size_t)o->n * sizeof(uint64_t));
    uint64_t errors = 0, reconnects = 0;
    size_t capacity = 65536, request_capacity = 0;
    char *buffer = malloc(capacity);
    char *request = NULL;
    for (long i = -o->warmup; i < o->n; i++) {
        body_t *body = next_body(bodies);
        size_t need = body->length + strlen(path) + strlen(address) + 256;
        if (need > request_capacity) {
            request_capacity = need * 2;
            request = realloc(request, request_capacity);
        }
        int head = snprintf(request, request_capacity,
                            "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                            "Accept: application/json\r\nContent-Length: %zu\r\nConnection: keep-alive\r\n\r\n",
                            path, address, body->length);
        memcpy(request + head, body->bytes, body->length);
        size_t length = (size_t)head + body->length;
        uint64_t start = now_ns();
        size_t body_at, body_length;
        int status;
        for (;;) {
            size_t written = 0;
            while (written < length) {
                ssize_t n = write(fd, request + written, length - written);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;
                written += (size_t)n;
            }
            status = written == length ? http_read_response(fd, &buffer, &capacity, &body_at, &body_length) : 0;
            if (status != 0) break;
            /* The server closed the keep-alive connection: open another (counted) and resend. */
            close(fd);
            fd = http_connect(host, port);
            reconnects++;
            if (reconnects > 1000) {
                fprintf(stderr, "pf-load: the server keeps closing the connection\n");
                return 2;
            }
        }
        uint64_t end = now_ns();
        if (status != 200 || !contains(buffer + body_at, body_length, o->expect, o->expect_length)) errors++;
        if (i >= 0) samples[i] = end - start;
    }
    char extra[64];
    snprintf(extra, sizeof extra, ",\"reconnects\":%llu", (unsigned long long)reconnects);
    print_latencies("http", samples, (size_t)o->n, errors, extra);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    options_t o = {.n = 10000, .warmup = 200, .clients = 1, .window = 32, .seconds = 2, .warmup_seconds = 0.3,
                   .timeout_ms = 10000, .expect = NULL};
    if (argc >= 4 && !strcmp(argv[1], "latency")) {
        parse_options(argc, argv, 4, &o);
        bodies_t bodies = load_bodies(argv[3]);
        return run_latency(argv[2], &bodies, &o);
    }
    if (argc >= 5 && !strcmp(argv[1], "pair")) {
        parse_options(argc, argv, 5, &o);
        bodies_t bodies = load_bodies(argv[4]);
        return run_pair(argv[2], argv[3], &bodies, &o);
    }
    if (argc >= 4 && !strcmp(argv[1], "throughput")) {
        parse_options(argc, argv, 4, &o);
        bodies_t bodies = load_bodies(argv[3]);
        return run_throughput(argv[2], &bodies, &o);
    }
    if (argc >= 5 && !strcmp(argv[1], "http")) {
        parse_options(argc, argv, 5, &o);
        bodies_t bodies = load_bodies(argv[4]);
        return run_http(argv[2], argv[3], &bodies, &o);
    }
    fprintf(stderr,
            "usage: pf-load latency ENDPOINT BODIES [-n N] [-w WARMUP] [-e EXPECT] [-t TIMEOUT_MS]\n"
            "       pf-load pair REFERENCE MEASURED BODIES [-n N] [-w WARMUP] [-k BLOCK] [-e EXPECT] [-t TIMEOUT_MS]\n"
            "       pf-load throughput ENDPOINT BODIES [-c CLIENTS] [-W WINDOW] [-s SECONDS] [-u WARMUP_S] [-e EXPECT] [-m ready|sweep]\n"
            "       pf-load http HOST:PORT PATH BODIES [-n N] [-w WARMUP] [-e EXPECT]\n");
    return 64;
}
