/**
 * Runs the launcher's DHCP server on a network cache, for tests that start it inside a
 * pod's network namespace (`nsenter --net=<ns> node --import tsx this-file <socketDir>`):
 * node cannot enter a namespace itself. Prints `ready` once bound, `ACK <ip> <mac>` per lease.
 */
import { readNetworkCache } from '../../src/controllers/common/network-cache';
import { dhcpBindings } from '../../src/controllers/virt-launcher/dhcp/bindings';
import { DhcpServer } from '../../src/controllers/virt-launcher/dhcp/server';

const cache = await readNetworkCache(process.argv[2] ?? '');
if (!cache) throw new Error(`no network cache in ${process.argv[2]}`);
const server = new DhcpServer(dhcpBindings(cache), (m) => process.stdout.write(`${m}\n`));
await server.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
