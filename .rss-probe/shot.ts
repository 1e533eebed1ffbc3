import { LibvirtClient } from '../src/drivers/libvirt';
const c = await LibvirtClient.connect({ uri: 'qemu:///system' });
const xml = `<domain type='qemu'><name>kvts-shot-probe-${process.pid}</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64' machine='q35'>hvm</type></os><devices><graphics type='vnc' autoport='yes' listen='127.0.0.1'/><video><model type='vga'/></video></devices></domain>`;
const dom = await c.domainCreateXML(xml);
const t = (c as any).transport;
const orig = t.dispatch.bind(t);
t.dispatch = (m: any) => { if (m.header.procedure === 211 || m.header.type === 3) console.log('msg', JSON.stringify(m.header), m.payload.length); return orig(m); };
try {
  await new Promise((r) => setTimeout(r, 3000));
  const t0 = Date.now();
  const shot = await c.domainScreenshot(dom, { timeoutMs: 20000 });
  console.log('mime', shot.mime, 'bytes', shot.data.length, 'head', JSON.stringify(shot.data.subarray(0, 20).toString('latin1')), Date.now() - t0, 'ms');
  const shot2 = await c.domainScreenshot(dom, { timeoutMs: 20000 });
  console.log('second', shot2.data.length);
} catch (e) { console.log('ERR', (e as Error).message); }
finally { await c.domainDestroy(dom); await c.close(); }
