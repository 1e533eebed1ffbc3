/** Kubernetes' `IsValidPortName`: an IANA service name (1-15 chars, lowercase alphanumerics and '-', one letter at least). */
export function isValidPortName(name: string): boolean {
  return (
    name.length >= 1 &&
    name.length <= 15 &&
    /^[-a-z0-9]+$/.test(name) &&
    /[a-z]/.test(name) &&
    !name.startsWith('-') &&
    !name.endsWith('-') &&
    !name.includes('--')
  );
}
