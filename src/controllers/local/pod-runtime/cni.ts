/**
 * Runs a CNI plugin the way kubelet's container runtime does (CNI spec 1.0): the plugin
 * binary from the plugin directory, the command and sandbox in `CNI_*` environment
 * variables, the network configuration on stdin, the result (or error) as JSON on stdout.
 * No shell is involved; every value is passed as an argument or environment entry.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

/** A CNI network configuration (what a `.conf` file holds); `type` names the plugin. */
export interface CniConfig {
  cniVersion: string;
  name: string;
  type: string;
  [key: string]: unknown;
}

/** The parts of a CNI ADD result kubevirt-ts reads. */
export interface CniResult {
  cniVersion?: string;
  interfaces?: { name: string; mac?: string; sandbox?: string }[];
  ips?: { interface?: number; address: string; gateway?: string }[];
  dns?: { nameservers?: string[]; search?: string[] };
}

/** Where the plugin runs: the sandbox's network namespace and the interface to create in it. */
export interface CniInvocation {
  command: 'ADD' | 'DEL' | 'CHECK';
  containerId: string;
  netns: string;
  ifName: string;
  /** Directory of plugin binaries (Debian's containernetworking-plugins: /usr/lib/cni). */
  pluginDir: string;
}

const PLUGIN_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Runs the plugin `config.type` and returns its parsed stdout (`{}` for DEL). */
export function invokeCni(config: CniConfig, call: CniInvocation): Promise<CniResult> {
  if (!PLUGIN_NAME.test(config.type)) {
    return Promise.reject(
      new Error(
        `CNI network ${config.name}: plugin type ${JSON.stringify(config.type)} is not a plugin name`,
      ),
    );
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerId,
    CNI_NETNS: call.netns,
    CNI_IFNAME: call.ifName,
    CNI_PATH: call.pluginDir,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(join(call.pluginDir, config.type), [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.once('error', (e) => reject(new Error(`CNI plugin ${config.type}: ${e.message}`)));
    child.once('close', (code) => {
      if (code === 0) {
        try {
          resolve(out.trim() ? (JSON.parse(out) as CniResult) : {});
        } catch {
          reject(
            new Error(
              `CNI plugin ${config.type} ${call.command}: unreadable result ${JSON.stringify(out.slice(0, 200))}`,
            ),
          );
        }
        return;
      }
      // Errors are `{code, msg, details}` on stdout (CNI spec); fall back to stderr.
      let msg = err.trim() || out.trim();
      try {
        const e = JSON.parse(out) as { msg?: string; details?: string };
        if (e.msg) msg = e.details ? `${e.msg}: ${e.details}` : e.msg;
      } catch {
        // Not JSON: keep the raw text.
      }
      reject(
        new Error(
          `CNI plugin ${config.type} ${call.command} (network ${config.name}) failed with ${code}: ${msg}`,
        ),
      );
    });
    child.stdin.end(JSON.stringify(config));
  });
}
