/*
 * pf-flood: the two clients of tools/flood (issue #7, overload), in C on libzmq so that the flood is
 * as hard as one core can make it and the polite client's own cost stays far below what it times.
 *
 *   pf-flood flood  ENDPOINT BODIES -c CLIENTS -W WINDOW [-s SECONDS] [-d DRAIN_S]
 *       CLIENTS DEALER sockets driven by one thread, each keeping WINDOW requests in flight and
 *       sending the next one the moment a reply comes back (no backoff: `retryAfterMs` is ignored,
 *       as a misbehaving app would). Bodies are used in turn. Runs for SECONDS (0: until SIGTERM or
 *       SIGINT), then stops sending and waits up to DRAIN_S (default 60) for every outstanding reply.
 *       Prints "flooding" once every socket has its first reply, then one JSON object.
 *   pf-flood polite ENDPOINT BODIES [-n N] [-w WARMUP] [-s SECONDS] [-t TIMEOUT_MS] [-e EXPECT]
 *       One DEALER, one request at a time, as a well-behaved app does: N timed round trips after
 *       WARMUP untimed ones (N 0: until SECONDS pass or SIGTERM). A request without its reply after
 *       TIMEOUT_MS (default 10000) is counted lost and the client moves on; a reply that arrives later
 *       is counted late, never as the answer to another request.
 *
 * In a body every "@@@@@@@@@@" (ten @) is replaced by the zero-padded request number, so ids (and,
 * where the mark is in an mbox name, misses) are unique without changing the size. Replies are matched
 * to requests by that id: `lost` is sent minus answered, `duplicates` counts a second reply to one id.
 * Latencies in microseconds, percentiles by nearest rank.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#define ID_MARK "@@@@@@@@@@"
#define ID_WIDTH 10
#define MAX_MARKS 8

typedef struct {
    char *bytes;
    size_t length;
    int marks;
    size_t mark_at[MAX_MARKS];
} body_t;

typedef struct {
    body_t *items;
    size_t count;
    size_t next;
} bodies_t;

static volatile sig_atomic_t stop_requested = 0;

static void on_signal(int signum) {
    (void)signum;
    stop_requested = 1;
}

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
        body->marks = 0;
        size_t from = 0;
        char *mark;
        while (body->marks < MAX_MARKS && from < body->length &&
               (mark = memmem(body->bytes + from, body->length - from, ID_MARK, ID_WIDTH)) != NULL) {
            body->mark_at[body->marks++] = (size_t)(mark - body->bytes);
            from = (size_t)(mark - body->bytes) + ID_WIDTH;
        }
    }
    free(line);
    fclose(file);
    if (bodies.count == 0) {
        fprintf(stderr, "pf-flood: %s has no bodies\n", path);
        exit(2);
    }
    return bodies;
}

/* The next body with every mark overwritten by `number`. */
static body_t *next_body(bodies_t *bodies, uint64_t number) {
    body_t *body = &bodies->items[bodies->next];
    bodies->next = (bodies->next + 1) % bodies->count;
    for (int m = 0; m < body->marks; m++) {
        uint64_t value = number;
        char *digits = body->bytes + body->mark_at[m];
        for (int i = ID_WIDTH - 1; i >= 0; i--) {
            digits[i] = (char)('0' + value % 10);
            value /= 10;
        }
    }
    return body;
}

static int contains(const void *haystack, size_t length, const char *needle) {
    size_t needle_length = strlen(needle);
    return needle_length == 0 || memmem(haystack, length, needle, needle_length) != NULL;
}

/* The request number in a reply's `"id":"0000000042"`, or -1. */
static int64_t reply_number(const char *data, size_t length) {
    const char *key = memmem(data, length, "\"id\":\"", 6);
    if (!key) return -1;
    const char *digits = key + 6;
    if ((size_t)(digits - data) + ID_WIDTH > length) return -1;
    int64_t value = 0;
    for (int i = 0; i < ID_WIDTH; i++) {
        if (digits[i] < '0' || digits[i] > '9') return -1;
        value = value * 10 + (digits[i] - '0');
    }
    return value;
}

/* One byte per request number: 0 never sent, 1 sent, 2 answered. */
typedef struct {
    uint8_t *state;
    size_t capacity;
} ledger_t;

static void ledger_sent(ledger_t *ledger, uint64_t number) {
    if (number >= ledger->capacity) {
        size_t capacity = ledger->capacity ? ledger->capacity : 1 << 16;
        while (capacity <= number) capacity *= 2;
        ledger->state = realloc(ledger->state, capacity);
        memset(ledger->state + ledger->capacity, 0, capacity - ledger->capacity);
        ledger->capacity = capacity;
    }
    ledger->state[number] = 1;
}

/* 1: first answer; 0: a second answer; -1: an id never sent. */
static int ledger_answered(ledger_t *ledger, int64_t number) {
    if (number < 0 || (uint64_t)number >= ledger->capacity || ledger->state[number] == 0) return -1;
    if (ledger->state[number] == 2) return 0;
    ledger->state[number] = 2;
    return 1;
}

static int send_body(void *socket, body_t *body) {
    if (zmq_send(socket, "", 0, ZMQ_SNDMORE) < 0) return -1;
    return zmq_send(socket, body->bytes, body->length, 0) < 0 ? -1 : 0;
}

typedef struct {
    long n, warmup, clients, window, timeout_ms;
    double seconds, drain_seconds;
    const char *expect;
} options_t;

static void parse_options(int argc, char **argv, int first, options_t *options) {
    for (int i = first; i < argc; i++) {
        const char *flag = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "pf-flood: %s needs a value\n", flag);
            exit(64);
        }
        const char *value = argv[++i];
        if (!strcmp(flag, "-n")) options->n = atol(value);
        else if (!strcmp(flag, "-w")) options->warmup = atol(value);
        else if (!strcmp(flag, "-c")) options->clients = atol(value);
        else if (!strcmp(flag, "-W")) options->window = atol(value);
        else if (!strcmp(flag, "-s")) options->seconds = atof(value);
        else if (!strcmp(flag, "-d")) options->drain_seconds = atof(value);
        else if (!strcmp(flag, "-t")) options->timeout_ms = atol(value);
        else if (!strcmp(flag, "-e")) options->expect = value;
        else {
            fprintf(stderr, "pf-flood: unknown option %s\n", flag);
            exit(64);
        }
    }
}

/* ---- flood: DEALERs pipelining without pause ------------------------------------------------ */

typedef struct {
    uint64_t cache, network, fallback, overloaded, other_errors, unrecognised;
} classes_t;

static void classify(const char *data, size_t length, classes_t *classes) {
    if (contains(data, length, "\"ok\":false")) {
        if (contains(data, length, "\"code\":\"overloaded\"")) classes->overloaded++;
        else classes->other_errors++;
    } else if (contains(data, length, "\"source\":\"cache\"")) classes->cache++;
    else if (contains(data, length, "\"source\":\"network\"")) classes->network++;
    else if (contains(data, length, "\"source\":\"default\"")) classes->fallback++;
    else classes->unrecognised++;
}

static int run_flood(const char *endpoint, bodies_t *bodies, options_t *o) {
    void *context = zmq_ctx_new();
    long k = o->clients;
    void **sockets = calloc((size_t)k, sizeof(void *));
    long *in_flight = calloc((size_t)k, sizeof(long));
    int *answered_once = calloc((size_t)k, sizeof(int));
    zmq_pollitem_t *items = calloc((size_t)k, sizeof(zmq_pollitem_t));
    for (long i = 0; i < k; i++) {
        sockets[i] = zmq_socket(context, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(sockets[i], ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_connect(sockets[i], endpoint) != 0) fail("connect");
        items[i].socket = sockets[i];
        items[i].events = ZMQ_POLLIN;
    }
    ledger_t ledger = {0};
    classes_t classes = {0};
    uint64_t sent = 0, received = 0, duplicates = 0, unknown = 0;
    uint64_t started = now_ns();
    uint64_t until = o->seconds > 0 ? started + (uint64_t)(o->seconds * 1e9) : UINT64_MAX;
    for (long i = 0; i < k; i++) {
        for (long w = 0; w < o->window; w++) {
            ledger_sent(&ledger, sent);
            if (send_body(sockets[i], next_body(bodies, sent)) < 0) fail("send");
            sent++;
            in_flight[i]++;
        }
    }
    long outstanding = k * o->window;
    long waiting_first = k;
    uint64_t stopped_at = 0, drain_deadline = 0;
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (outstanding > 0) {
        uint64_t now = now_ns();
        if (!stopped_at && (stop_requested || now >= until)) {
            stopped_at = now;
            drain_deadline = now + (uint64_t)(o->drain_seconds * 1e9);
        }
        if (stopped_at && now > drain_deadline) break;
        int progress = 0;
        for (long i = 0; i < k; i++) {
            /* At most 64 replies from one socket per pass, so every flooding socket gets its turn. */
            for (int turn = 0; turn < 64 && in_flight[i] > 0; turn++) {
                if (zmq_msg_recv(&frame, sockets[i], ZMQ_DONTWAIT) < 0) {
                    if (zmq_errno() == EAGAIN || zmq_errno() == EINTR) break;
                    fail("receive");
                }
                while (zmq_msg_more(&frame)) {
                    if (zmq_msg_recv(&frame, sockets[i], 0) < 0) fail("receive");
                }
                const char *data = zmq_msg_data(&frame);
                size_t length = zmq_msg_size(&frame);
                progress = 1;
                received++;
                int fresh = ledger_answered(&ledger, reply_number(data, length));
                if (fresh < 0) {
                    unknown++;
                    continue;
                }
                if (fresh == 0) {
                    duplicates++;
                    continue;
                }
                in_flight[i]--;
                outstanding--;
                classify(data, length, &classes);
                if (!answered_once[i]) {
                    answered_once[i] = 1;
                    if (--waiting_first == 0) {
                        printf("flooding\n");
                        fflush(stdout);
                    }
                }
                if (!stopped_at) {
                    ledger_sent(&ledger, sent);
                    if (send_body(sockets[i], next_body(bodies, sent)) < 0) fail("send");
                    sent++;
                    in_flight[i]++;
                    outstanding++;
                }
            }
        }
        if (!progress) {
            if (zmq_poll(items, (int)k, 10) < 0 && zmq_errno() != EINTR) fail("poll");
        }
    }
    uint64_t ended = now_ns();
    zmq_msg_close(&frame);
    uint64_t answered = received - duplicates - unknown;
    double seconds = (double)((stopped_at ? stopped_at : ended) - started) / 1e9;
    printf("{\"mode\":\"flood\",\"clients\":%ld,\"window\":%ld,\"seconds\":%.3f,\"drainSeconds\":%.3f,"
           "\"sent\":%llu,\"received\":%llu,\"answered\":%llu,\"lost\":%llu,\"duplicates\":%llu,\"unknown\":%llu,"
           "\"cache\":%llu,\"network\":%llu,\"default\":%llu,\"overloaded\":%llu,\"otherErrors\":%llu,"
           "\"unrecognised\":%llu,\"rps\":%.1f}\n",
           k, o->window, seconds, stopped_at ? (double)(ended - stopped_at) / 1e9 : 0.0, (unsigned long long)sent,
           (unsigned long long)received, (unsigned long long)answered, (unsigned long long)(sent - answered),
           (unsigned long long)duplicates, (unsigned long long)unknown, (unsigned long long)classes.cache,
           (unsigned long long)classes.network, (unsigned long long)classes.fallback,
           (unsigned long long)classes.overloaded, (unsigned long long)classes.other_errors,
           (unsigned long long)classes.unrecognised, seconds > 0 ? (double)answered / seconds : 0.0);
    fflush(stdout);
    for (long i = 0; i < k; i++) zmq_close(sockets[i]);
    zmq_ctx_term(context);
    return sent == answered ? 0 : 3;
}

/* ---- polite: one request at a time, timed ---------------------------------------------------- */

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double rank(const uint64_t *sorted, size_t n, double percent) {
    if (n == 0) return 0;
    size_t index = (size_t)((percent / 100.0) * (double)n + 0.999999999);
    if (index < 1) index = 1;
    if (index > n) index = n;
    return (double)sorted[index - 1] / 1000.0;
}

static int run_polite(const char *endpoint, bodies_t *bodies, options_t *o) {
    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(socket, endpoint) != 0) fail("connect");
    size_t capacity = o->n > 0 ? (size_t)o->n : 65536, count = 0;
    uint64_t *samples = malloc(capacity * sizeof(uint64_t));
    uint64_t sent = 0, answered = 0, lost = 0, late = 0, errors = 0;
    uint64_t started = now_ns();
    uint64_t until = o->seconds > 0 ? started + (uint64_t)(o->seconds * 1e9) : UINT64_MAX;
    zmq_pollitem_t item = {.socket = socket, .events = ZMQ_POLLIN};
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    for (long i = -o->warmup; o->n <= 0 || i < o->n; i++) {
        if (stop_requested || now_ns() >= until) break;
        uint64_t number = sent++;
        body_t *body = next_body(bodies, number);
        uint64_t start = now_ns();
        if (send_body(socket, body) < 0) fail("send");
        uint64_t deadline = start + (uint64_t)o->timeout_ms * 1000000ull;
        int got = 0;
        while (!got) {
            uint64_t now = now_ns();
            if (now >= deadline) break;
            int rc = zmq_poll(&item, 1, (long)((deadline - now) / 1000000ull) + 1);
            if (rc < 0) {
                if (zmq_errno() == EINTR) continue;
                fail("poll");
            }
            if (rc == 0) continue;
            if (zmq_msg_recv(&frame, socket, 0) < 0) fail("receive");
            while (zmq_msg_more(&frame)) {
                if (zmq_msg_recv(&frame, socket, 0) < 0) fail("receive");
            }
            uint64_t end = now_ns();
            const char *data = zmq_msg_data(&frame);
            size_t length = zmq_msg_size(&frame);
            if (reply_number(data, length) != (int64_t)number) {
                late++;
                continue;
            }
            got = 1;
            answered++;
            if (!contains(data, length, o->expect ? o->expect : "")) errors++;
            if (i >= 0) {
                if (count == capacity) {
                    capacity *= 2;
                    samples = realloc(samples, capacity * sizeof(uint64_t));
                }
                samples[count++] = end - start;
            }
        }
        if (!got) lost++;
    }
    zmq_msg_close(&frame);
    qsort(samples, count, sizeof *samples, compare_u64);
    double sum = 0;
    for (size_t i = 0; i < count; i++) sum += (double)samples[i];
    printf("{\"mode\":\"polite\",\"n\":%zu,\"sent\":%llu,\"answered\":%llu,\"lost\":%llu,\"late\":%llu,"
           "\"errors\":%llu,\"seconds\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,"
           "\"mean\":%.3f}\n",
           count, (unsigned long long)sent, (unsigned long long)answered, (unsigned long long)lost,
           (unsigned long long)late, (unsigned long long)errors, (double)(now_ns() - started) / 1e9,
           rank(samples, count, 50), rank(samples, count, 90), rank(samples, count, 99), rank(samples, count, 99.9),
           count ? (double)samples[count - 1] / 1000.0 : 0.0, count ? sum / (double)count / 1000.0 : 0.0);
    fflush(stdout);
    zmq_close(socket);
    zmq_ctx_term(context);
    return lost ? 3 : 0;
}

int main(int argc, char **argv) {
    options_t o = {.n = 1000, .warmup = 50, .clients = 2, .window = 256, .timeout_ms = 10000, .seconds = 0,
                   .drain_seconds = 60, .expect = NULL};
    struct sigaction action = {0};
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    if (argc >= 4 && !strcmp(argv[1], "flood")) {
        parse_options(argc, argv, 4, &o);
        bodies_t bodies = load_bodies(argv[3]);
        return run_flood(argv[2], &bodies, &o);
    }
    if (argc >= 4 && !strcmp(argv[1], "polite")) {
        parse_options(argc, argv, 4, &o);
        bodies_t bodies = load_bodies(argv[3]);
        return run_polite(argv[2], &bodies, &o);
    }
    fprintf(stderr,
            "usage: pf-flood flood  ENDPOINT BODIES [-c CLIENTS] [-W WINDOW] [-s SECONDS] [-d DRAIN_S]\n"
            "       pf-flood polite ENDPOINT BODIES [-n N] [-w WARMUP] [-s SECONDS] [-t TIMEOUT_MS] [-e EXPECT]\n");
    return 64;
}
