/** The maintainer script that checks our procedure numbers against libvirt's .x files. */
import { describe, expect, it } from 'vitest';
import {
  compareConstants,
  compareProcedures,
  ourPublicConstants,
  parseApiEnums,
  parseProcedures,
} from '../../../scripts/check-libvirt-protocol';

// A synthetic excerpt in rpcgen's enum syntax (not libvirt's text).
const sample = `enum remote_procedure {
    /**
     * @generate: none
     */
    REMOTE_PROC_CONNECT_OPEN = 1,

    REMOTE_PROC_DOMAIN_LOOKUP_BY_NAME = 23,
    REMOTE_PROC_DOMAIN_NEW_THING = 999
};`;

describe('check-libvirt-protocol', () => {
  it('parses enum members with their numbers', () => {
    const m = parseProcedures(sample, 'REMOTE_PROC_');
    expect([...m.entries()]).toEqual([
      ['CONNECT_OPEN', 1],
      ['DOMAIN_LOOKUP_BY_NAME', 23],
      ['DOMAIN_NEW_THING', 999],
    ]);
  });

  it('reports wrong and missing numbers, and nothing when they match', () => {
    const theirs = parseProcedures(sample, 'REMOTE_PROC_');
    expect(compareProcedures({ CONNECT_OPEN: 1, DOMAIN_LOOKUP_BY_NAME: 23 }, theirs, 'REMOTE_PROC_')).toEqual(
      [],
    );
    expect(compareProcedures({ CONNECT_OPEN: 2, GONE: 5 }, theirs, 'REMOTE_PROC_')).toEqual([
      'REMOTE_PROC_CONNECT_OPEN: ours 2, libvirt 1',
      "REMOTE_PROC_GONE: not in libvirt's enum",
    ]);
  });

  it('parses API enums and compares our public constants under libvirt names', () => {
    const xml = `<api><symbols>
    <enum name='VIR_ERR_NO_DOMAIN' file='virterror' value='42' value_hex='0x2a' type='virErrorNumber'/>
    <enum name='VIR_DOMAIN_EVENT_ID_LIFECYCLE' file='libvirt-domain' value='0' type='virDomainEventID'/>
    <enum name='VIR_MIGRATE_PEER2PEER' file='libvirt-domain' value='3' type='virDomainMigrateFlags'/>
    </symbols></api>`;
    const theirs = parseApiEnums(xml);
    expect(theirs.get('VIR_ERR_NO_DOMAIN')).toBe(42);
    const ours = ourPublicConstants();
    expect(ours.VIR_ERR_NO_DOMAIN).toBe(42);
    expect(ours.VIR_DOMAIN_EVENT_ID_LIFECYCLE).toBe(0);
    expect(ours.VIR_DOMAIN_START_PAUSED).toBe(1);
    const problems = compareConstants(
      { VIR_ERR_NO_DOMAIN: 42, VIR_DOMAIN_EVENT_ID_LIFECYCLE: 0, VIR_MIGRATE_PEER2PEER: 2, VIR_NOPE: 1 },
      theirs,
    );
    expect(problems).toEqual(['VIR_MIGRATE_PEER2PEER: ours 2, libvirt 3', "VIR_NOPE: not in libvirt's API"]);
  });
});
