import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './free-port';

const ephemeralStart = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);

describe('freePort', () => {
  it('gives loopback ports below the kernel ephemeral range that a server can bind', async () => {
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(20_000);
      expect(p).toBeLessThan(Math.min(ephemeralStart, 30_000));
    }
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(ports[0], '127.0.0.1', () => resolve());
    });
    await new Promise<void>((r) => srv.close(() => r()));
  });
});
