/**
 * The cluster VM tests' traffic checks against their peer pod (an ECHO_SERVER on the pod
 * network, which logs `from <ip> got <n>` for each connection): the bytes the guest sent
 * as the peer counted them, and the peer's echo through the guest's address.
 */
import { ECHO_CLIENT } from '../support/netns-process';
import { waitFor } from '../support/wait';

type Kubectl = (...args: string[]) => string;

/** The peer's log once it shows `bytes` received from `from` (a connection is logged when it closes). */
export function peerLogOnceGot(
  kubectl: Kubectl,
  namespace: string,
  from: string,
  bytes: number,
  timeoutMs = 30_000,
): Promise<string> {
  return waitFor(
    `the peer to count ${bytes} bytes from ${from}`,
    () => {
      const logs = kubectl('logs', '-n', namespace, 'peer');
      return logs.includes(`from ${from} got ${bytes}`) ? logs : undefined;
    },
    timeoutMs,
    500,
  );
}

/** What ECHO_CLIENT in the peer pod answers after sending `bytes` to `ip:port` ("echoed <n>"). */
export function peerEcho(
  kubectl: Kubectl,
  namespace: string,
  ip: string,
  port: number,
  bytes: number,
): string {
  return kubectl(
    'exec',
    '-n',
    namespace,
    'peer',
    '--',
    'node',
    '-e',
    ECHO_CLIENT,
    ip,
    String(port),
    String(bytes),
  );
}
