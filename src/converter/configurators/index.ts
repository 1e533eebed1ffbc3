/** The configurators, in upstream KubeVirt's order. */
import type { Configurator } from '../conversion';
import { channelsConfigurator } from './channels';
import { clockConfigurator } from './clock';
import { consoleConfigurator } from './console';
import { controllersConfigurator } from './controllers';
import { cpuConfigurator } from './cpu';
import { disksConfigurator } from './disks';
import { filesystemsConfigurator } from './filesystems';
import { graphicsConfigurator } from './graphics';
import { hostDevicesConfigurator } from './host-devices';
import { hypervisorConfigurator } from './hypervisor';
import { hypervisorFeaturesConfigurator } from './hypervisor-features';
import { inputsConfigurator } from './inputs';
import { interfacesConfigurator } from './interfaces';
import { iothreadsConfigurator } from './iothreads';
import { launchSecurityConfigurator } from './launch-security';
import { memballoonConfigurator } from './memballoon';
import { memoryConfigurator } from './memory';
import { metadataConfigurator } from './metadata';
import { osConfigurator } from './os';
import { rebootPolicyConfigurator } from './reboot-policy';
import { rngConfigurator } from './rng';
import { soundConfigurator } from './sound';
import { sysinfoConfigurator } from './sysinfo';
import { tpmConfigurator } from './tpm';
import { usbRedirectionConfigurator } from './usb-redirection';
import { vsockConfigurator } from './vsock';
import { watchdogConfigurator } from './watchdog';

/** Every configurator, in the order the pipeline runs them. */
export const configurators: readonly Configurator[] = [
  metadataConfigurator,
  interfacesConfigurator,
  tpmConfigurator,
  vsockConfigurator,
  launchSecurityConfigurator,
  channelsConfigurator,
  clockConfigurator,
  rngConfigurator,
  inputsConfigurator,
  memballoonConfigurator,
  graphicsConfigurator,
  soundConfigurator,
  hostDevicesConfigurator,
  watchdogConfigurator,
  consoleConfigurator,
  hypervisorFeaturesConfigurator,
  sysinfoConfigurator,
  osConfigurator,
  filesystemsConfigurator,
  disksConfigurator,
  usbRedirectionConfigurator,
  controllersConfigurator,
  cpuConfigurator,
  iothreadsConfigurator,
  memoryConfigurator,
  rebootPolicyConfigurator,
  hypervisorConfigurator,
];

export {
  channelsConfigurator,
  clockConfigurator,
  consoleConfigurator,
  controllersConfigurator,
  cpuConfigurator,
  disksConfigurator,
  filesystemsConfigurator,
  graphicsConfigurator,
  hostDevicesConfigurator,
  hypervisorConfigurator,
  hypervisorFeaturesConfigurator,
  inputsConfigurator,
  interfacesConfigurator,
  iothreadsConfigurator,
  launchSecurityConfigurator,
  memballoonConfigurator,
  memoryConfigurator,
  metadataConfigurator,
  osConfigurator,
  rebootPolicyConfigurator,
  rngConfigurator,
  soundConfigurator,
  sysinfoConfigurator,
  tpmConfigurator,
  usbRedirectionConfigurator,
  vsockConfigurator,
  watchdogConfigurator,
};
