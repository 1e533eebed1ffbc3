/**
 * Diagnostics for bench/virt-api.ts, loaded into virt-api with
 * `BENCH_VIRTAPI_NODE_ARGS="--import ./bench/virt-api-diag.mjs"`: counts the TLS
 * connections its server accepts by negotiated ALPN protocol (and, on a server that offers
 * no ALPN, what clients offered), the requests, their p50/p95 time from request to answer,
 * and the process's CPU, printed as a `DIAG {json}` line on stderr every second.
 */
import http2 from 'node:http2';
import https from 'node:https';

const durations = [];
const pct = (p) => {
  const x = [...durations].sort((a, b) => a - b);
  return Number((x[Math.floor((p / 100) * x.length)] ?? 0).toFixed(2));
};
const st = { conns: 0, reqs: 0, offered: {}, chosen: {} };
const count = (m, k) => {
  m[k] = (m[k] ?? 0) + 1;
};
const watch = (s) => {
  s.on('secureConnection', (t) => {
    st.conns++;
    count(st.chosen, String(t.alpnProtocol));
  });
  s.on('request', (_req, res) => {
    st.reqs++;
    const t = performance.now();
    res.on('finish', () => durations.push(performance.now() - t));
  });
  return s;
};
// A server offering no ALPN: record the clients' offers and answer as it would (HTTP/1.1).
const offers = (o) =>
  o.ALPNProtocols
    ? o
    : {
        ...o,
        ALPNCallback: ({ protocols }) => {
          count(st.offered, protocols.join(','));
          return protocols.includes('http/1.1') ? 'http/1.1' : undefined;
        },
      };
const httpsServer = https.createServer;
https.createServer = (o, ...rest) => watch(httpsServer(offers(o), ...rest));
const http2Server = http2.createSecureServer;
http2.createSecureServer = (o, ...rest) => watch(http2Server(o, ...rest));
setInterval(() => {
  const c = process.cpuUsage();
  const line = { ...st, srv_p50: pct(50), srv_p95: pct(95), cpu_ms: Math.round((c.user + c.system) / 1000) };
  process.stderr.write(`DIAG ${JSON.stringify(line)}\n`);
}, 1000).unref();
