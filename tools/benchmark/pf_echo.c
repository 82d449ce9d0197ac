/*
 * pf-echo: the raw libzmq baseline of tools/bench.
 *
 * The smallest server libzmq allows: one thread, one bound socket, blocking receive, send back.
 * It is what preflightd's cached answers are compared against, so it does nothing but move bytes.
 *
 *   pf-echo rep    ENDPOINT [REPLY_FILE]   REP socket: each request gets one reply (latency runs)
 *   pf-echo router ENDPOINT [REPLY_FILE]   ROUTER socket: envelope frames go back as they came,
 *                                          then the reply (throughput runs, pipelining DEALERs)
 *
 * Without REPLY_FILE the last frame is echoed. With it, every reply is that file's bytes, so the raw
 * round trip moves exactly the bytes the agent moves (its request out, its reply back).
 * Prints "ready" on stdout once bound; SIGTERM or SIGINT stops it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static volatile sig_atomic_t stopping = 0;

static void on_signal(int signum) {
    (void)signum;
    stopping = 1;
}

static char *read_file(const char *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        perror(path);
        exit(2);
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc(size > 0 ? (size_t)size : 1);
    if (size > 0 && fread(bytes, 1, (size_t)size, file) != (size_t)size) {
        perror(path);
        exit(2);
    }
    fclose(file);
    /* A trailing newline is the file's, not the message's. */
    while (size > 0 && (bytes[size - 1] == '\n' || bytes[size - 1] == '\r')) size--;
    *length = (size_t)size;
    return bytes;
}

static void die(const char *what) {
    fprintf(stderr, "pf-echo: %s: %s\n", what, zmq_strerror(zmq_errno()));
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[1], "rep") != 0 && strcmp(argv[1], "router") != 0)) {
        fprintf(stderr, "usage: pf-echo rep|router ENDPOINT [REPLY_FILE]\n");
        return 64;
    }
    int router = strcmp(argv[1], "router") == 0;
    size_t reply_length = 0;
    char *reply = argc > 3 ? read_file(argv[3], &reply_length) : NULL;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal; /* no SA_RESTART: a blocked receive returns EINTR */
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    void *context = zmq_ctx_new();
    void *socket = zmq_socket(context, router ? ZMQ_ROUTER : ZMQ_REP);
    int linger = 0, hwm = 1000; /* the agent's ROUTER uses the same high-water marks */
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(socket, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (zmq_bind(socket, argv[2]) != 0) die("bind");
    printf("ready\n");
    fflush(stdout);

    enum { MAX_FRAMES = 16 };
    zmq_msg_t frames[MAX_FRAMES];
    while (!stopping) {
        int count = 0, more = 1;
        while (more) {
            zmq_msg_t *frame = &frames[count < MAX_FRAMES ? count : MAX_FRAMES - 1];
            if (count >= MAX_FRAMES) zmq_msg_close(frame); /* absurd message: keep the last frames only */
            zmq_msg_init(frame);
            if (zmq_msg_recv(frame, socket, 0) < 0) {
                zmq_msg_close(frame);
                if (zmq_errno() == EINTR || zmq_errno() == ETERM) goto done;
                die("receive");
            }
            more = zmq_msg_more(frame);
            if (count < MAX_FRAMES) count++;
        }
        /* Envelope frames (ROUTER identity, empty delimiter) go back as they came. */
        for (int i = 0; i < count - 1; i++) {
            if (zmq_msg_send(&frames[i], socket, ZMQ_SNDMORE) < 0) zmq_msg_close(&frames[i]);
        }
        zmq_msg_t *last = &frames[count - 1];
        if (reply) {
            zmq_msg_close(last);
            if (zmq_send(socket, reply, reply_length, 0) < 0 && zmq_errno() == EINTR) break;
        } else if (zmq_msg_send(last, socket, 0) < 0) {
            zmq_msg_close(last);
            if (zmq_errno() == EINTR) break;
        }
    }
done:
    zmq_close(socket);
    zmq_ctx_term(context);
    free(reply);
    return 0;
}
