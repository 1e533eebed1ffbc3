/**
 * What `virtctl ssh`/`scp`/`port-forward` make of their arguments: the targets (upstream's
 * `TYPE/NAME/NAMESPACE` and the older `NAME.NAMESPACE`), the port forms, and the ssh
 * client's command line (ProxyCommand through `port-forward --stdio`, quoted for the shell
 * ssh runs it with). Real traffic is in test/e2e/network-local-ssh.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseForwardTarget, parsePortMapping } from '../../../src/cli/commands/virtctl/port-forward';
import {
  parseScpOperand,
  parseSshTarget,
  type SshOptions,
  sshClientArgs,
  sshHost,
} from '../../../src/cli/commands/virtctl/ssh';

const opts = (o: Partial<SshOptions> = {}): SshOptions => ({ port: '22', localSshOpts: [], ...o });

describe('port-forward arguments', () => {
  it('parses targets and ports as upstream writes them', () => {
    expect(parseForwardTarget('vmi/a', 'def')).toEqual({ name: 'a', namespace: 'def' });
    expect(parseForwardTarget('vm/a/ns1', 'def')).toEqual({ name: 'a', namespace: 'ns1' });
    expect(parseForwardTarget('virtualmachineinstance/a.ns2', 'def')).toEqual({
      name: 'a',
      namespace: 'ns2',
    });
    expect(parseForwardTarget('a', 'def')).toEqual({ name: 'a', namespace: 'def' });
    expect(() => parseForwardTarget('pod/a', 'def')).toThrow('target "pod/a"');
    expect(() => parseForwardTarget('vmi/A_b', 'def')).toThrow('target "vmi/A_b"');
    expect(() => parseForwardTarget('vmi/a/b/c', 'def')).toThrow('target "vmi/a/b/c"');
    expect(parsePortMapping('2222:22')).toEqual({ local: 2222, remote: 22 });
    expect(parsePortMapping('tcp/8080')).toEqual({ local: 8080, remote: 8080 });
    expect(parsePortMapping('0:80/tcp')).toEqual({ local: 0, remote: 80 });
    expect(() => parsePortMapping('udp/53')).toThrow('UDP forwarding is not supported');
    expect(() => parsePortMapping('70000')).toThrow('out of range');
    expect(() => parsePortMapping('x:1')).toThrow('expected [LOCAL:]REMOTE');
  });
});

describe('ssh and scp arguments', () => {
  const self = ['/usr/bin/node', '/opt/kubevirt ts/dist/cli/virtctl.js'];

  it('runs ssh with a ProxyCommand through port-forward --stdio, the options passed on', () => {
    const t = parseSshTarget('root@vmi/guest1/ns1', 'def');
    expect(t).toEqual({ kind: 'vmi', name: 'guest1', namespace: 'ns1', user: 'root' });
    const args = sshClientArgs(
      self,
      t,
      opts({
        port: '2200',
        stateDir: '/var/lib/k%ts',
        identityFile: '/k/id',
        knownHosts: '/k/known',
        localSshOpts: ['-o StrictHostKeyChecking=no'],
      }),
    );
    expect(args).toEqual([
      '-o',
      "ProxyCommand=/usr/bin/node '/opt/kubevirt ts/dist/cli/virtctl.js' port-forward --stdio --state-dir '/var/lib/k%%ts' vmi/guest1/ns1 2200",
      '-o',
      'UserKnownHostsFile=/k/known',
      '-o StrictHostKeyChecking=no',
      '-i',
      '/k/id',
    ]);
    expect(sshHost(t, opts({ username: 'ignored' }))).toBe('root@vmi.guest1.ns1');
    expect(sshHost(parseSshTarget('vm/g', 'def'), opts({ username: 'jdoe' }))).toBe('jdoe@vm.g.def');
    const cluster = sshClientArgs(
      self,
      parseSshTarget('vm/g.ns', 'def'),
      opts({ kubeconfig: '/k/cfg', stateDir: '/s' }),
    );
    expect(cluster[1]).toBe(
      "ProxyCommand=/usr/bin/node '/opt/kubevirt ts/dist/cli/virtctl.js' port-forward --stdio --kubeconfig /k/cfg vm/g/ns 22",
    );
  });

  it('refuses bad users and ports; tells remote scp operands from local paths', () => {
    expect(() => parseSshTarget('a b@vmi/x', 'def')).toThrow('bad user name');
    expect(() => sshClientArgs(self, parseSshTarget('vmi/x', 'd'), opts({ port: '0' }))).toThrow('--port: 0');
    expect(parseScpOperand('root@vmi/x/ns:/tmp/a b', 'def')).toEqual({
      remote: { kind: 'vmi', name: 'x', namespace: 'ns', user: 'root' },
      path: '/tmp/a b',
    });
    expect(parseScpOperand('vm/x:rel', 'def')).toEqual({
      remote: { kind: 'vm', name: 'x', namespace: 'def', user: undefined },
      path: 'rel',
    });
    expect(parseScpOperand('./file:with-colon', 'def')).toEqual({ local: './file:with-colon' });
    expect(parseScpOperand('/tmp/x', 'def')).toEqual({ local: '/tmp/x' });
  });
});
