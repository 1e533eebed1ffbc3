/*
 * virt-handler's TLS migration relay: carries one mutual-TLS migration connection between
 * the launcher's unix socket and the other node's handler, with OpenSSL, so that guest
 * memory is encrypted and copied in C rather than through Node's TLS streams (on a busy
 * two-core node the CPU Node spends is taken from the QEMU whose memory is crossing;
 * docs/benchmarks.md). migration-relay.c is the plain (disableTLS) counterpart.
 *
 *   kubevirt-ts-migration-tls-relay client <peer CN>          fd 3: launcher side, fd 4: TCP to the
 *                                                           target handler
 *   kubevirt-ts-migration-tls-relay server <peer CN> <path>   fd 3: TCP from the source handler; <path>:
 *                                                           the target launcher's socket, dialled once
 *                                                           the peer is accepted
 *
 * Stdin: "<cert bytes> <key bytes> <ca bytes>\n" and the three PEM blocks (never on the
 * command line), then "ok\n" once virt-handler has accepted the peer. During the handshake
 * the relay verifies the peer's chain to the CA (both sides require a certificate) and its
 * common name (as upstream's VerifyPeerCertificate: a target refused there never gets the
 * source's Finished). virt-handler's whole identity rule (migration-proxy/tls.ts, key usages
 * too) then judges the certificate the relay reports on its first stdout line, "peer <DER in
 * hex>", before a byte is carried. The target dials the launcher only after that: a
 * stranger's connection never reaches QEMU's one incoming migration socket.
 *
 * Then as migration-relay.c: stdout "<bytes fd3->other> <bytes other->fd3>" lines (plain
 * text bytes) at most every 100 ms while they change and once at the end, SIGTERM's
 * included; a direction that fails ends both; one that ends cleanly passes the end on
 * (TLS: close_notify, then FIN) and the other gets up to 5 s to end too. A TCP end without
 * close_notify is a failure, as in Go's crypto/tls. Exit 3: the handshake or the dial failed
 * (stderr says why).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "relay-counts.h"

#define BUF (256 * 1024)
#define HANDSHAKE_MS 15000
#define GRACE_MS 5000

/* Plain-text bytes read from each side: [0] from fd 3, [1] towards it. */
static volatile unsigned long long carried[2];

/* One end of the connection: a socket, with its TLS session when it is the network side. */
struct side {
  int fd;
  SSL *ssl;
};

/* One direction's buffer and state. */
struct direction {
  struct side *from, *to;
  char *buf;
  size_t off, len;
  short rwant, wwant; /* poll events a blocked read / write waits for; 0: not blocked */
  int eof, ended;
};

#define BLOCKED (-2)

static void die(const char *what, const char *why) {
  fprintf(stderr, "%s: %s\n", what, why);
  exit(3);
}

/* The common name the peer's certificate must carry; set when the verify callback refused another. */
static const char *peer_cn;
static char wrong_cn[160];

/* OpenSSL's chain verdict, then the peer certificate's (depth 0) common name: exactly one, the expected one. */
static int verify_peer(int ok, X509_STORE_CTX *x) {
  if (!ok || X509_STORE_CTX_get_error_depth(x) != 0) return ok;
  X509_NAME *subject = X509_get_subject_name(X509_STORE_CTX_get_current_cert(x));
  char cn[160] = "";
  int at = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  int more = at >= 0 && X509_NAME_get_index_by_NID(subject, NID_commonName, at) >= 0;
  int n = X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof cn);
  if (at >= 0 && !more && n > 0 && (size_t)n < sizeof cn - 1 && strcmp(cn, peer_cn) == 0) return 1;
  snprintf(wrong_cn, sizeof wrong_cn, "%s", at < 0 ? "(none)" : more ? "(several)" : cn);
  X509_STORE_CTX_set_error(x, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

static const char *tls_error(SSL *ssl) {
  static char msg[512];
  long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  unsigned long e = ERR_get_error();
  if (wrong_cn[0]) snprintf(msg, sizeof msg, "peer certificate common name \"%s\" is not %s", wrong_cn, peer_cn);
  else if (v != X509_V_OK) snprintf(msg, sizeof msg, "certificate verify failed: %s", X509_verify_cert_error_string(v));
  else if (e) ERR_error_string_n(e, msg, sizeof msg);
  else snprintf(msg, sizeof msg, "%s", errno ? strerror(errno) : "connection closed");
  return msg;
}

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void set_nonblocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) die("migration-tls-relay", "a socket is not open");
}

/* Reads the three PEM blocks from stdin. */
static void read_material(char **pem, size_t *len) {
  if (scanf("%zu %zu %zu", &len[0], &len[1], &len[2]) != 3 || getchar() != '\n')
    die("migration-tls-relay", "no key material on stdin");
  for (int i = 0; i < 3; i++) {
    if (len[i] > (1 << 20)) die("migration-tls-relay", "key material too large");
    pem[i] = malloc(len[i] + 1);
    if (!pem[i] || fread(pem[i], 1, len[i], stdin) != len[i]) die("migration-tls-relay", "short key material");
  }
}

/* The context of one side: its certificate (and chain), key, the CA it trusts, both ends verified. */
static SSL_CTX *context(int server, char **pem, size_t *len) {
  SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!ctx) die("TLS setup", tls_error(NULL));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (server) SSL_CTX_set_num_tickets(ctx, 0);
  BIO *b = BIO_new_mem_buf(pem[0], (int)len[0]);
  X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  if (!x || SSL_CTX_use_certificate(ctx, x) != 1) die("TLS setup: certificate", tls_error(NULL));
  X509_free(x);
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) SSL_CTX_add_extra_chain_cert(ctx, x);
  ERR_clear_error(); /* the end of the chain */
  BIO_free(b);
  b = BIO_new_mem_buf(pem[1], (int)len[1]);
  EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
  if (!k || SSL_CTX_use_PrivateKey(ctx, k) != 1 || SSL_CTX_check_private_key(ctx) != 1)
    die("TLS setup: key", tls_error(NULL));
  EVP_PKEY_free(k);
  BIO_free(b);
  b = BIO_new_mem_buf(pem[2], (int)len[2]);
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  int cas = 0;
  while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
    X509_STORE_add_cert(store, x);
    X509_free(x);
    cas++;
  }
  ERR_clear_error();
  BIO_free(b);
  if (!cas) die("TLS setup", "no CA certificate");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_peer);
  return ctx;
}

/* Waits up to the deadline for `events` on fd; exits when it passes. */
static void wait_for(int fd, short events, long long deadline, const char *what) {
  for (;;) {
    long long left = deadline - now_ms();
    if (left <= 0) die(what, "timed out");
    struct pollfd p = {fd, events, 0};
    int n = poll(&p, 1, (int)left);
    if (n > 0) return;
    if (n < 0 && errno != EINTR) die(what, strerror(errno));
  }
}

static void handshake(SSL *ssl, int fd, int server) {
  long long deadline = now_ms() + HANDSHAKE_MS;
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (r == 1) return;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ) wait_for(fd, POLLIN, deadline, "TLS handshake");
    else if (e == SSL_ERROR_WANT_WRITE) wait_for(fd, POLLOUT, deadline, "TLS handshake");
    else die("TLS handshake", tls_error(ssl));
  }
}

/* "peer <hex DER>" on stdout, then virt-handler's verdict on stdin: anything but "ok" ends the relay. */
static void ask_about_peer(SSL *ssl) {
  X509 *peer = SSL_get1_peer_certificate(ssl);
  unsigned char *der = NULL;
  int n = peer ? i2d_X509(peer, &der) : -1;
  if (n <= 0) die("TLS handshake", "no peer certificate");
  fputs("peer ", stdout);
  for (int i = 0; i < n; i++) printf("%02x", der[i]);
  putchar('\n');
  fflush(stdout);
  OPENSSL_free(der);
  X509_free(peer);
  char verdict[8];
  if (!fgets(verdict, sizeof verdict, stdin) || strcmp(verdict, "ok\n") != 0) exit(0);
}

static int dial_unix(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) die("launcher socket", "path too long");
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die(path, strerror(errno));
  return fd;
}

/* >0 bytes, 0 at the end, BLOCKED (with *want set), -1 on failure. */
static ssize_t side_read(struct side *s, char *buf, size_t n, short *want) {
  if (!s->ssl) {
    ssize_t r = read(s->fd, buf, n);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EINTR) return *want = POLLIN, BLOCKED;
    return -1;
  }
  ERR_clear_error();
  int r = SSL_read(s->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
  if (r > 0) return r;
  switch (SSL_get_error(s->ssl, r)) {
  case SSL_ERROR_ZERO_RETURN: return 0; /* close_notify */
  case SSL_ERROR_WANT_READ: return *want = POLLIN, BLOCKED;
  case SSL_ERROR_WANT_WRITE: return *want = POLLOUT, BLOCKED;
  default: return -1;
  }
}

static ssize_t side_write(struct side *s, const char *buf, size_t n, short *want) {
  if (!s->ssl) {
    ssize_t w = write(s->fd, buf, n);
    if (w >= 0) return w;
    if (errno == EAGAIN || errno == EINTR) return *want = POLLOUT, BLOCKED;
    return -1;
  }
  ERR_clear_error();
  int w = SSL_write(s->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
  if (w > 0) return w;
  switch (SSL_get_error(s->ssl, w)) {
  case SSL_ERROR_WANT_READ: return *want = POLLIN, BLOCKED;
  case SSL_ERROR_WANT_WRITE: return *want = POLLOUT, BLOCKED;
  default: return -1;
  }
}

/* Passes a clean end on: 1 done, BLOCKED, -1 on failure. */
static int side_end(struct side *s, short *want) {
  if (s->ssl) {
    ERR_clear_error();
    int r = SSL_shutdown(s->ssl);
    if (r < 0) {
      int e = SSL_get_error(s->ssl, r);
      if (e == SSL_ERROR_WANT_WRITE) return *want = POLLOUT, BLOCKED;
      if (e == SSL_ERROR_WANT_READ) return *want = POLLIN, BLOCKED;
      return -1;
    }
  }
  shutdown(s->fd, SHUT_WR);
  return 1;
}

/* One pass over a direction: 1 if it moved, 0 if it is blocked or done, -1 on failure. */
static int step(struct direction *d, int idx) {
  int moved = 0;
  if (!d->eof && d->len == 0 && !d->rwant) {
    ssize_t r = side_read(d->from, d->buf, BUF, &d->rwant);
    if (r == -1) return -1;
    if (r == 0) d->eof = 1;
    if (r > 0) {
      d->off = 0;
      d->len = (size_t)r;
      carried[idx] += (unsigned long long)r;
    }
    moved = r != BLOCKED;
  }
  while (d->len > 0 && !d->wwant) {
    ssize_t w = side_write(d->to, d->buf + d->off, d->len, &d->wwant);
    if (w == -1) return -1;
    if (w == BLOCKED) break;
    d->off += (size_t)w;
    d->len -= (size_t)w;
    moved = 1;
  }
  if (d->eof && d->len == 0 && !d->ended && !d->wwant) {
    int r = side_end(d->to, &d->wwant);
    if (r == -1) return -1;
    if (r == 1) d->ended = moved = 1;
  }
  return moved;
}

/* SIGTERM (the proxy's stop()): the last counts, then exit. */
static void on_term(int sig) {
  (void)sig;
  report_and_exit(carried[0], carried[1]);
}

static void report(void) {
  printf("%llu %llu\n", carried[0], carried[1]);
  fflush(stdout);
}

/* Moves bytes both ways until both directions ended, one failed, or the grace after the first end ran out. */
static void relay(struct side *first, struct side *second) {
  static char bufs[2][BUF];
  struct direction d[2] = {{first, second, bufs[0], 0, 0, 0, 0, 0, 0}, {second, first, bufs[1], 0, 0, 0, 0, 0, 0}};
  unsigned long long last[2] = {0, 0};
  long long next_report = now_ms() + 100, grace_until = 0;
  for (;;) {
    int moved = 0;
    for (int i = 0; i < 2; i++) {
      int r = step(&d[i], i);
      if (r < 0) return;
      moved |= r;
    }
    if (d[0].ended && d[1].ended) return;
    long long now = now_ms();
    if ((d[0].ended || d[1].ended) && !grace_until) grace_until = now + GRACE_MS;
    if (grace_until && now >= grace_until) return;
    if (now >= next_report) {
      if (carried[0] != last[0] || carried[1] != last[1]) report();
      last[0] = carried[0];
      last[1] = carried[1];
      next_report = now + 100;
    }
    if (moved) continue;
    /* Nothing could move: wait for what the blocked operations want, then try them all again. */
    struct pollfd p[2] = {{first->fd, 0, 0}, {second->fd, 0, 0}};
    for (int i = 0; i < 2; i++) {
      p[d[i].from == first ? 0 : 1].events |= d[i].rwant;
      p[d[i].to == first ? 0 : 1].events |= d[i].wwant;
    }
    for (int i = 0; i < 2; i++)
      if (!p[i].events) p[i].fd = -1; /* a hang-up there concerns no waiting operation */
    long long until = grace_until && grace_until < next_report ? grace_until : next_report;
    if (poll(p, 2, (int)(until > now ? until - now : 0)) < 0 && errno != EINTR) return;
    for (int i = 0; i < 2; i++) d[i].rwant = d[i].wwant = 0;
  }
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_term);
  int server = argc == 4 && strcmp(argv[1], "server") == 0;
  if (!server && !(argc == 3 && strcmp(argv[1], "client") == 0)) {
    fprintf(stderr, "usage: %s client <peer CN> | server <peer CN> <launcher socket>\n", argv[0]);
    return 2;
  }
  peer_cn = argv[2];
  char *pem[3];
  size_t len[3];
  read_material(pem, len);
  SSL_CTX *ctx = context(server, pem, len);
  for (int i = 0; i < 3; i++) {
    OPENSSL_cleanse(pem[i], len[i]);
    free(pem[i]);
  }
  int net = server ? 3 : 4;
  set_nonblocking(net);
  SSL *ssl = SSL_new(ctx);
  if (!ssl || SSL_set_fd(ssl, net) != 1) die("TLS setup", tls_error(NULL));
  handshake(ssl, net, server);
  ask_about_peer(ssl);
  struct side tls = {net, ssl}, plain = {server ? dial_unix(argv[3]) : 3, NULL};
  set_nonblocking(plain.fd);
  if (server) relay(&tls, &plain);
  else relay(&plain, &tls);
  report();
  return 0;
}
