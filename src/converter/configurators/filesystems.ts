/**
 * virtiofs filesystems: each served by a virtiofsd the launcher starts on a unix socket.
 * virtiofs needs shared guest memory, so memory is backed by memfd with shared access.
 */
import { type Configurator, type Conversion, userAlias } from '../conversion';

export const filesystemsConfigurator: Configurator = {
  name: 'filesystems',
  configure(c: Conversion) {
    const fss = c.spec.domain.devices.filesystems ?? [];
    if (fss.length === 0) return;
    const volumes = new Set((c.spec.volumes ?? []).map((v) => v.name));
    c.domain.devices.filesystem = fss.map((fs, i) => {
      const path = `spec.domain.devices.filesystems[${i}]`;
      c.segment(fs.name, `${path}.name`);
      if (!fs.virtiofs) c.fail(`${path}.virtiofs`, 'is required (virtiofs is the only filesystem type)');
      if (!volumes.has(fs.name)) c.fail(`${path}.name`, `no volume named '${fs.name}' in spec.volumes`);
      return {
        type: 'mount' as const,
        accessmode: 'passthrough' as const,
        driver: { type: 'virtiofs' as const, queue: 1024, iommu: c.iommu ? ('on' as const) : undefined },
        source: { socket: `${c.ctx.paths.virtiofsDir}/${fs.name}.sock` },
        target: { dir: fs.name },
        alias: userAlias(fs.name),
      };
    });
    c.domain.memoryBacking ??= {};
    c.domain.memoryBacking.source = { type: 'memfd' };
    c.domain.memoryBacking.access = { mode: 'shared' };
  },
};
