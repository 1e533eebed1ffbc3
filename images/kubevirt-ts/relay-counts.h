/*
 * The byte counts both migration relays (migration-relay.c, migration-tls-relay.c) report
 * on stdout for virt-handler's counters: "<bytes fd3->other> <bytes other->fd3>" lines.
 */
#ifndef KUBEVIRT_TS_RELAY_COUNTS_H
#define KUBEVIRT_TS_RELAY_COUNTS_H
#include <unistd.h>

/*
 * The last counts from a SIGTERM handler (the proxy's stop()), then exit: only
 * async-signal-safe calls. A newline first ends a line the relay may have been writing.
 */
static void report_and_exit(unsigned long long first, unsigned long long second) {
  char line[48], *p = line + sizeof line;
  unsigned long long v[2] = {first, second};
  *--p = '\n';
  for (int i = 1; i >= 0; i--) {
    unsigned long long n = v[i];
    do *--p = (char)('0' + n % 10); while ((n /= 10) && p > line);
    if (i) *--p = ' ';
  }
  *--p = '\n';
  (void)!write(1, p, (size_t)(line + sizeof line - p));
  _exit(0);
}

#endif
