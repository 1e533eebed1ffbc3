/*
 * virt-handler's migration relay: carries one plain (disableTLS) migration connection
 * between the two sockets it inherits as file descriptors 3 and 4, copying in the kernel
 * with splice(2) as Go's io.Copy does between upstream's proxy sockets. Node's own copy
 * reads every chunk into a new Buffer and writes it out again; on a busy two-core node that
 * CPU is taken from the QEMU whose memory is crossing (docs/benchmarks.md).
 *
 * A direction that fails ends both at once, as upstream's proxy does. One that ends cleanly
 * (EOF) passes the end on (shutdown(SHUT_WR): FIN after every byte queued) and gives the
 * other direction up to 5 s to end too before both close. Upstream closes both at the first
 * end; closing a TCP socket that still has unread bytes sends a reset, which drops the bytes
 * it had not sent yet, so waiting for the peer's end keeps the tail of the stream.
 *
 * Stdout: "<bytes 3->4> <bytes 4->3>" lines, at most every 100 ms while the counts change,
 * and once more at the end, SIGTERM's included (virt-handler's byte counters). Built static (gcc -static) so the
 * image needs no libc of its own for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "relay-counts.h"

#define CHUNK (1 << 20)

/* Bytes read from each side (as Node's copy counts them): counted before they are written
 * on, so a report can never lag a byte the peer already has. */

static atomic_ullong carried[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ended = PTHREAD_COND_INITIALIZER;
static int ended_count, failed;

struct direction {
  int from, to, idx;
};

/* Writes n bytes of buf to fd; 0 once all are written, -1 on error. */
static int write_all(int fd, const char *buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= w;
  }
  return 0;
}

/* read/write copy, for a kernel that refuses to splice one of the sockets: 0 at EOF, -1 on error. */
static int copy_plain(const struct direction *d) {
  static __thread char buf[256 * 1024];
  for (;;) {
    ssize_t n = read(d->from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return 0;
    if (n < 0) return -1;
    carried[d->idx] += (unsigned long long)n;
    if (write_all(d->to, buf, n) < 0) return -1;
  }
}

/* socket -> pipe -> socket, the pages moved rather than copied where the kernel can: 0 at EOF, -1 on error. */
static int copy_splice(const struct direction *d) {
  int p[2], rc = -1;
  if (pipe2(p, O_CLOEXEC) < 0) return copy_plain(d);
  (void)fcntl(p[1], F_SETPIPE_SZ, CHUNK); /* a larger pipe where allowed; 64 KiB otherwise */
  int first = 1;
  for (;;) {
    ssize_t n = splice(d->from, NULL, p[1], NULL, CHUNK, SPLICE_F_MOVE);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && first && errno == EINVAL) {
      rc = copy_plain(d);
      break;
    }
    if (n == 0) rc = 0;
    if (n <= 0) break;
    first = 0;
    carried[d->idx] += (unsigned long long)n;
    while (n > 0) {
      ssize_t w = splice(p[0], NULL, d->to, NULL, (size_t)n, SPLICE_F_MOVE);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) goto out;
      n -= w;
    }
  }
out:
  close(p[0]);
  close(p[1]);
  return rc;
}

static void *run(void *arg) {
  const struct direction *d = arg;
  int rc = copy_splice(d);
  /* EOF: the end goes on to the other side once everything before it is queued. */
  if (rc == 0) shutdown(d->to, SHUT_WR);
  pthread_mutex_lock(&mu);
  ended_count++;
  if (rc != 0) failed = 1;
  pthread_cond_signal(&ended);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* SIGTERM (the proxy's stop()): the last counts, then exit. */
static void on_term(int sig) {
  (void)sig;
  report_and_exit(carried[0], carried[1]);
}

static void report(void) {
  printf("%llu %llu\n", (unsigned long long)carried[0], (unsigned long long)carried[1]);
  fflush(stdout);
}

int main(void) {
  /* A peer gone mid-write is an ordinary end, not a reason to die without the last report. */
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_term);
  static struct direction dirs[2] = {{3, 4, 0}, {4, 3, 1}};
  for (int fd = 3; fd <= 4; fd++) {
    int fl = fcntl(fd, F_GETFL);
    /* Node hands its sockets over non-blocking; the copy threads block instead. */
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
      fprintf(stderr, "migration-relay: file descriptor %d: %s\n", fd, fl < 0 ? "not open" : "fcntl failed");
      return 2;
    }
  }
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    if (pthread_create(&t[i], NULL, run, &dirs[i]) != 0) {
      fprintf(stderr, "migration-relay: cannot start a copy thread\n");
      return 2;
    }
  }
  unsigned long long last[2] = {0, 0};
  time_t grace_until = 0;
  pthread_mutex_lock(&mu);
  while (ended_count < 2 && !failed) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (ended_count == 1) {
      if (!grace_until) grace_until = until.tv_sec + 5;
      if (until.tv_sec >= grace_until) break;
    }
    until.tv_nsec += 100 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&ended, &mu, &until);
    if (carried[0] != last[0] || carried[1] != last[1]) {
      last[0] = carried[0];
      last[1] = carried[1];
      report();
    }
  }
  pthread_mutex_unlock(&mu);
  report();
  return 0;
}
