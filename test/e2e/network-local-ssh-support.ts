/**
 * Helpers of network-local-ssh.test.ts: a TCP connection holder to run in a pod's network
 * namespace, a child process's output collector, and an echo round trip through a
 * forwarded local port.
 */
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';

/** Holds one TCP connection: each stdin line N sends N bytes and prints `echoed N` when all came back. */
export const HOLD = `const [h,p]=process.argv.slice(1);const c=require('net').connect(+p,h,()=>console.log('connected'));let want=0,got=0;c.on('data',d=>{got+=d.length;if(want>0&&got>=want){console.log('echoed '+got);got=0;want=0}});require('readline').createInterface({input:process.stdin}).on('line',l=>{want=+l;c.write(Buffer.alloc(want,3))});c.on('close',()=>console.log('closed'));c.on('error',e=>console.log('error '+e.message))`;

/** Collects a child's stdout and stderr as they come; the returned function reads them so far. */
export function output(child: ChildProcess): () => string {
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  return () => out;
}

/** Sends `bytes`, half-closes, and counts what comes back until the other side closes. */
export function echoThrough(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = connect(port, '127.0.0.1', () => c.end(Buffer.alloc(bytes, 5)));
    let got = 0;
    c.on('data', (d) => {
      got += d.length;
    });
    c.on('close', () => resolve(got));
    c.on('error', reject);
  });
}
