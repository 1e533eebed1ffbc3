const what = process.argv[2];
const base = process.memoryUsage();
if (what === 'root') await import('@kubernetes/client-node');
else if (what === 'config') await import('@kubernetes/client-node/dist/config.js');
else if (what === 'program') await import(process.cwd() + '/dist/cli/program.js');
else if (what === 'virtapi-mods') { await import(process.cwd() + '/dist/controllers/index.js'); }
globalThis.gc?.();
const m = process.memoryUsage();
console.log(what, 'rss', (m.rss/1048576).toFixed(1), 'heapUsed', (m.heapUsed/1048576).toFixed(1), 'heapTotal', (m.heapTotal/1048576).toFixed(1), 'ext', (m.external/1048576).toFixed(1), 'base rss', (base.rss/1048576).toFixed(1));
