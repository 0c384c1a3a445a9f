/** Renewal arithmetic: when a certificate must be re-issued, by its lifetime and `renewBefore`. */

/** `renewBefore` defaults to a third of the lifetime, as the contract says. */
export function renewalTime(notBefore: Date, notAfter: Date, renewBeforeMs?: number): Date {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  const before = renewBeforeMs ?? lifetime / 3;
  return new Date(notAfter.getTime() - Math.min(before, lifetime));
}

export function needsRenewal(notBefore: Date, notAfter: Date, now: Date, renewBeforeMs?: number): boolean {
  return now.getTime() >= renewalTime(notBefore, notAfter, renewBeforeMs).getTime();
}
