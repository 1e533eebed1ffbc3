/**
 * The shape table of the domain XML model: for each element, which properties are
 * attributes (and which of those are numbers), whether it carries text, and its child
 * elements in the order libvirt prints them. `xml.ts` walks this table to encode and
 * decode, so adding an element to the model means adding one line here.
 */

/** How a text-only child is typed in the model. */
export type Leaf = 'string' | 'number';

/** One element's shape. */
export interface ElementSpec {
  /** Attribute name -> whether it is a number. Order is output order. */
  attrs: ReadonlyArray<readonly [name: string, numeric: boolean]>;
  /** Text content (held in `value`), if the element has attributes and text. */
  text?: Leaf;
  /** Child elements, in output order. */
  children: ReadonlyArray<ChildSpec>;
}

/** A child element: its tag (also the model property), its shape, and whether it repeats. */
export interface ChildSpec {
  tag: string;
  spec: ElementSpec | Leaf;
  many: boolean;
}

type ChildDef = ElementSpec | Leaf | { many: ElementSpec | Leaf };

/**
 * Builds an element spec. `attrs` is a space-separated list; a trailing `#` marks a
 * numeric attribute. `text` declares text content next to attributes.
 */
function el(attrs: string, children: Record<string, ChildDef> = {}, text?: Leaf): ElementSpec {
  return {
    attrs: attrs
      .split(' ')
      .filter(Boolean)
      .map((a): readonly [string, boolean] => (a.endsWith('#') ? [a.slice(0, -1), true] : [a, false])),
    text,
    children: Object.entries(children).map(([tag, def]) =>
      typeof def === 'object' && 'many' in def
        ? { tag, spec: def.many, many: true }
        : { tag, spec: def as ElementSpec | Leaf, many: false },
    ),
  };
}

const many = (spec: ElementSpec | Leaf) => ({ many: spec });
const S: Leaf = 'string';
const N: Leaf = 'number';

const empty = el('');
const state = el('state');
const alias = el('name');
const address = el('type domain bus slot function controller target unit port device uuid multifunction');
const charSource = el('mode path');
const iommuDriver = el('iommu');
const sysinfoBlock = el('', { entry: many(el('name', {}, S)) });
const sizedNumber = (extra = '') => el(`unit ${extra}`.trim(), {}, N);

const diskSource = el('file dev dir name');

/** The `<domain>` element. */
export const domainSpec: ElementSpec = el('type xmlns:qemu', {
  name: S,
  uuid: S,
  metadata: el('', {
    kubevirt: el('xmlns', {
      uid: S,
      graceperiod: el('', { deletionGracePeriodSeconds: N, deletionTimestamp: S }),
    }),
  }),
  maxMemory: sizedNumber('slots#'),
  memory: sizedNumber(),
  currentMemory: sizedNumber(),
  memoryBacking: el('', {
    hugepages: el('', { page: many(el('size# unit nodeset')) }),
    nosharepages: empty,
    locked: empty,
    source: el('type'),
    access: el('mode'),
    allocation: el('mode'),
  }),
  vcpu: el('placement current#', {}, N),
  vcpus: el('', { vcpu: many(el('id# enabled hotpluggable order#')) }),
  iothreads: N,
  cputune: el('', {
    vcpupin: many(el('vcpu# cpuset')),
    emulatorpin: el('cpuset'),
    iothreadpin: many(el('iothread# cpuset')),
    vcpusched: many(el('vcpus scheduler priority#')),
  }),
  numatune: el('', {
    memory: el('mode nodeset'),
    memnode: many(el('cellid# mode nodeset')),
  }),
  sysinfo: el('type', {
    bios: sysinfoBlock,
    system: sysinfoBlock,
    baseBoard: sysinfoBlock,
    chassis: sysinfoBlock,
  }),
  os: el('', {
    type: el('arch machine', {}, S),
    loader: el('readonly secure type', {}, S),
    nvram: el('template', {}, S),
    kernel: S,
    initrd: S,
    cmdline: S,
    boot: many(el('dev')),
    bootmenu: el('enable timeout#'),
    bios: el('useserial'),
    smbios: el('mode'),
    acpi: el('', { table: many(el('type', {}, S)) }),
  }),
  features: el('', {
    acpi: empty,
    apic: el('eoi'),
    hyperv: el('mode', {
      relaxed: state,
      vapic: state,
      spinlocks: el('state retries#'),
      vpindex: state,
      runtime: state,
      synic: state,
      stimer: el('state', { direct: state }),
      reset: state,
      vendor_id: el('state value'),
      frequencies: state,
      reenlightenment: state,
      tlbflush: state,
      ipi: state,
      evmcs: state,
    }),
    kvm: el('', { hidden: state, 'hint-dedicated': state }),
    pvspinlock: state,
    pmu: state,
    vmport: state,
    smm: state,
    ioapic: el('driver'),
  }),
  cpu: el('mode match check', {
    model: el('fallback', {}, S),
    topology: el('sockets# dies# cores# threads#'),
    feature: many(el('policy name')),
    numa: el('', { cell: many(el('id# cpus memory# unit memAccess')) }),
  }),
  clock: el('offset timezone adjustment basis', {
    timer: many(el('name tickpolicy present track frequency#')),
  }),
  on_poweroff: S,
  on_reboot: S,
  on_crash: S,
  devices: el('', {
    emulator: S,
    disk: many(
      el('type device model', {
        driver: el('name type cache io error_policy discard iothread# queues# iommu'),
        source: diskSource,
        backingStore: el('type', { format: el('type'), source: diskSource }),
        target: el('dev bus tray removable'),
        serial: S,
        boot: el('order#'),
        readonly: empty,
        shareable: empty,
        blockio: el('logical_block_size# physical_block_size#'),
        alias,
        address,
      }),
    ),
    controller: many(
      el('type index# model ports#', { driver: el('iothread# queues# iommu'), alias, address }),
    ),
    filesystem: many(
      el('type accessmode', {
        driver: el('type queue# iommu'),
        binary: el('path'),
        source: el('dir socket'),
        target: el('dir'),
        alias,
      }),
    ),
    interface: many(
      el('type managed trustGuestRxFilters', {
        mac: el('address'),
        source: el('bridge network dev', { address }),
        target: el('dev managed'),
        model: el('type'),
        backend: el('type logFile'),
        portForward: many(el('proto dev', { range: many(el('start# end# exclude')) })),
        driver: el('name queues# iommu'),
        mtu: el('size#'),
        link: el('state'),
        rom: el('enabled bar file'),
        boot: el('order#'),
        alias,
        address,
        acpi: el('index#'),
      }),
    ),
    serial: many(el('type', { source: charSource, target: el('port# type'), log: el('file append'), alias })),
    console: many(el('type', { source: charSource, target: el('type port#'), alias })),
    channel: many(el('type', { source: charSource, target: el('type name state'), alias, address })),
    input: many(el('type bus model', { alias, address })),
    tpm: many(el('model', { backend: el('type version persistent_state'), alias })),
    graphics: many(el('type autoport port# socket', { listen: many(el('type address socket')) })),
    sound: many(el('model', { alias })),
    video: many(el('', { model: el('type heads# vram# primary'), alias })),
    hostdev: many(
      el('mode type managed model display ramfb', {
        source: el('', { vendor: el('id'), product: el('id'), address }),
        boot: el('order#'),
        rom: el('bar'),
        alias,
        address,
      }),
    ),
    redirdev: many(el('bus type', { source: charSource, alias })),
    watchdog: many(el('model action', { alias })),
    memballoon: el('model freePageReporting', { stats: el('period#'), driver: iommuDriver, alias, address }),
    memory: many(
      el('model', {
        target: el('', {
          size: sizedNumber(),
          node: N,
          block: sizedNumber(),
          requested: sizedNumber(),
          current: sizedNumber(),
        }),
        alias,
        address,
      }),
    ),
    rng: many(el('model', { backend: el('model', {}, S), driver: iommuDriver, alias, address })),
    panic: many(el('model', { alias })),
    vsock: el('model', { cid: el('auto address#'), driver: iommuDriver, alias }),
  }),
  launchSecurity: el('type', {
    cbitpos: N,
    reducedPhysBits: N,
    policy: S,
    dhCert: S,
    session: S,
  }),
  // libvirt's QEMU namespace (xmlns:qemu): extra QEMU arguments, one <qemu:arg> each.
  'qemu:commandline': el('', { 'qemu:arg': many(el('value')) }),
});
