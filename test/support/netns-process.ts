/**
 * Processes inside network namespaces for network tests: `nsenter --net` (node cannot
 * enter one itself), waiting for a marker in their output.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';

export const repoRoot = new URL('../..', import.meta.url).pathname;

/** Runs a command in `/run/netns/<ns>` and returns its stdout. */
export function inNs(ns: string, cmd: string, args: string[], timeout = 20_000): string {
  return execFileSync('nsenter', [`--net=/run/netns/${ns}`, '--', cmd, ...args], {
    encoding: 'utf8',
    timeout,
  });
}

/** A process in a namespace whose output is collected. */
export interface NsProcess {
  child: ChildProcess;
  out: () => string;
}

/** Starts `cmd args` in a namespace; resolves once its output contains `marker`. */
export function startInNs(
  ns: string,
  cmd: string,
  args: string[],
  marker: string,
  timeoutMs = 20_000,
): Promise<NsProcess> {
  const child = spawn('nsenter', [`--net=/run/netns/${ns}`, '--', cmd, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return new Promise((resolve, reject) => {
    const t = setTimeout(
      () => reject(new Error(`no ${JSON.stringify(marker)} from ${cmd}: ${out.slice(-3000)}`)),
      timeoutMs,
    );
    const check = () => {
      if (out.includes(marker)) {
        clearTimeout(t);
        resolve({ child, out: () => out });
      } else if (child.exitCode === null) setTimeout(check, 25);
    };
    child.once('exit', (c) => {
      if (!out.includes(marker)) {
        clearTimeout(t);
        reject(new Error(`${cmd} exited ${c}: ${out.slice(-3000)}`));
      }
    });
    check();
  });
}

/** Echo server: prints `ready`, then `from <address> got <bytes>` per connection. */
export const ECHO_SERVER = `require('net').createServer(s=>{let n=0;s.on('data',d=>{n+=d.length;s.write(d)});s.on('end',()=>{console.log('from '+s.remoteAddress+' got '+n);s.end()})}).listen(+process.argv[1],'0.0.0.0',()=>console.log('ready'))`;
/**
 * Client: sends N bytes to host:port, prints `echoed <bytes>` once all N came back or the
 * connection closed (or `error ...`, or `timeout, echoed <bytes>` after 90 s, below the
 * callers' 120 s limits). It does not wait for the peer's FIN once everything is echoed: a
 * user-mode forwarder (passt) may pass the close on late, and the bytes are what is checked.
 */
export const ECHO_CLIENT = `const [h,p,n]=process.argv.slice(1);const c=require('net').connect(+p,h,()=>c.end(Buffer.alloc(+n,1)));let r=0,done=false;const fin=m=>{if(done)return;done=true;console.log(m);c.destroy()};c.on('data',d=>{r+=d.length;if(r>=+n)fin('echoed '+r)});c.on('close',()=>fin('echoed '+r));c.on('error',e=>fin('error '+e.message));setTimeout(()=>fin('timeout, echoed '+r),90000).unref()`;

/**
 * A client that holds one connection open across a disruption: connects to host:port,
 * sends N bytes and prints `first <echoed>` once they are echoed, then waits for the file
 * argv[4] to appear, sends N more and prints `second <echoed>` (the total) before closing;
 * `error <message>` on a failure, `closed` at the end.
 */
export const HOLD_CLIENT = `const [h,p,n,go]=process.argv.slice(1);const fs=require('fs');const c=require('net').connect(+p,h,()=>c.write(Buffer.alloc(+n,2)));let r=0,phase=1;c.on('data',d=>{r+=d.length;if(phase===1&&r>=+n){phase=2;console.log('first '+r);const t=setInterval(()=>{if(fs.existsSync(go)){clearInterval(t);c.write(Buffer.alloc(+n,3))}},100)}else if(phase===2&&r>=2*+n){phase=3;console.log('second '+r);c.end()}});c.on('error',e=>console.log('error '+e.message));c.on('close',()=>console.log('closed'))`;
