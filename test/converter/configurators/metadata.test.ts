import { describe, expect, it } from 'vitest';
import { metadataConfigurator } from '../../../src/converter/configurators';
import { run, vmi } from '../support/run';

describe('metadata configurator', () => {
  it('names the domain <namespace>_<name> and records uid and grace period', () => {
    const d = run(
      [metadataConfigurator],
      vmi({ terminationGracePeriodSeconds: 45 }, { namespace: 'ns', uid: 'abc-1' }),
    );
    expect(d.name).toBe('ns_t');
    expect(d.metadata).toEqual({
      kubevirt: {
        xmlns: 'http://kubevirt.io',
        uid: 'abc-1',
        graceperiod: { deletionGracePeriodSeconds: 45 },
      },
    });
  });

  it('uses the firmware UUID, lower-cased, and rejects one that is not a UUID', () => {
    const d = run(
      [metadataConfigurator],
      vmi({ domain: { firmware: { uuid: '5D307CA9-B3EF-428C-8861-06E72D69F223' } } }),
    );
    expect(d.uuid).toBe('5d307ca9-b3ef-428c-8861-06e72d69f223');
    expect(() => run([metadataConfigurator], vmi({ domain: { firmware: { uuid: 'nope' } } }))).toThrow(
      "VirtualMachineInstance/t: spec.domain.firmware.uuid: 'nope' is not a UUID",
    );
  });

  it('rejects names that cannot be part of a path or domain name', () => {
    expect(() => run([metadataConfigurator], vmi({}, { name: 'a/../b' }))).toThrow(
      /metadata\.name: must consist of/,
    );
    expect(() => run([metadataConfigurator], vmi({}, { namespace: '<ns>' }))).toThrow(
      /metadata\.namespace: must consist of/,
    );
  });
});
