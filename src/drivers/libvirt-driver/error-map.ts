/** libvirt's errors as the driver contract's `DriverError` codes. */
import { DriverError, type DriverErrorCode } from '../errors';
import {
  LibvirtError,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
  VIR_ERR_CONFIG_UNSUPPORTED,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_INVALID,
  VIR_ERR_OPERATION_UNSUPPORTED,
  VIR_ERR_XML_DETAIL,
  VIR_ERR_XML_ERROR,
} from '../libvirt';

/** Maps a failure of `op` on `subject` (e.g. `domain ns_name`) to a `DriverError` naming both. */
export function mapLibvirtError(e: unknown, subject: string, op: string): DriverError {
  if (e instanceof DriverError) return e;
  if (!(e instanceof LibvirtError)) {
    return new DriverError('Hypervisor', `${subject}: ${op} failed: ${(e as Error)?.message ?? e}`, {
      cause: e,
    });
  }
  let code: DriverErrorCode = 'Hypervisor';
  if (e.code === VIR_ERR_NO_DOMAIN) code = 'NotFound';
  else if (e.code === VIR_ERR_OPERATION_INVALID) code = 'InvalidState';
  else if (
    [
      VIR_ERR_NO_SUPPORT,
      VIR_ERR_OPERATION_UNSUPPORTED,
      VIR_ERR_CONFIG_UNSUPPORTED,
      VIR_ERR_ARGUMENT_UNSUPPORTED,
    ].includes(e.code)
  )
    code = 'Unsupported';
  else if (e.code === VIR_ERR_XML_ERROR || e.code === VIR_ERR_XML_DETAIL) code = 'Invalid';
  // virCheckFlags: this hypervisor driver does not implement a flag we passed.
  else if (e.code === VIR_ERR_INVALID_ARG && e.str2 === 'flags') code = 'Unsupported';
  return new DriverError(code, `${subject}: ${op} failed: ${e.message}`, { cause: e });
}
