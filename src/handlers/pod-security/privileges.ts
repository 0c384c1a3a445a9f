/**
 * Pod Security checks of what a container may do beyond the default (policy/check_privileged.go,
 * check_allowPrivilegeEscalation.go, check_capabilities_baseline.go,
 * check_capabilities_restricted.go): privileged containers, privilege escalation and Linux
 * capabilities, each revision with the version it applies from. Pure; the frame is checks.ts'.
 */
import { ALLOWED, containersNamed, forbidden, isWindows, joinQuote, nameOf, sortedSet, visitContainers, type Check, type CheckPod } from './checks.ts';

const privileged1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    if (c.securityContext?.privileged === true) bad.push(nameOf(c));
  });
  return bad.length ? forbidden('privileged', `${containersNamed(bad)} must not set securityContext.privileged=true`, bad) : ALLOWED;
};

const allowPrivilegeEscalation1_8: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    if (c.securityContext?.allowPrivilegeEscalation !== false) bad.push(nameOf(c));
  });
  return bad.length ? forbidden('allowPrivilegeEscalation != false', `${containersNamed(bad)} must set securityContext.allowPrivilegeEscalation=false`, bad) : ALLOWED;
};
const allowPrivilegeEscalation1_25: CheckPod = (meta, spec) => (isWindows(spec) ? ALLOWED : allowPrivilegeEscalation1_8(meta, spec));

const DEFAULT_CAPABILITIES = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const listOf = (value: unknown): string[] => (Array.isArray(value) ? value.map((v) => String(v ?? '')) : []);

const capabilitiesBaseline1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  const nonDefault: string[] = [];
  visitContainers(spec, (c) => {
    const capabilities = c.securityContext?.capabilities;
    if (!capabilities) return;
    const added = listOf(capabilities.add).filter((cap) => !DEFAULT_CAPABILITIES.has(cap));
    if (added.length) {
      bad.push(nameOf(c));
      nonDefault.push(...added);
    }
  });
  return bad.length ? forbidden('non-default capabilities', `${containersNamed(bad)} must not include ${joinQuote(sortedSet(nonDefault))} in securityContext.capabilities.add`, bad) : ALLOWED;
};

const capabilitiesRestricted1_22: CheckPod = (_meta, spec) => {
  const missingDropAll: string[] = [];
  const addingForbidden: string[] = [];
  const forbiddenCapabilities: string[] = [];
  visitContainers(spec, (c) => {
    const capabilities = c.securityContext?.capabilities;
    if (!capabilities) {
      missingDropAll.push(nameOf(c));
      return;
    }
    if (!listOf(capabilities.drop).includes('ALL')) missingDropAll.push(nameOf(c));
    const added = listOf(capabilities.add).filter((cap) => cap !== 'NET_BIND_SERVICE');
    if (added.length) {
      addingForbidden.push(nameOf(c));
      forbiddenCapabilities.push(...added);
    }
  });
  const details: string[] = [];
  if (missingDropAll.length) details.push(`${containersNamed(missingDropAll)} must set securityContext.capabilities.drop=["ALL"]`);
  if (addingForbidden.length) details.push(`${containersNamed(addingForbidden)} must not include ${joinQuote(sortedSet(forbiddenCapabilities))} in securityContext.capabilities.add`);
  return details.length ? forbidden('unrestricted capabilities', details.join('; '), [...missingDropAll, ...addingForbidden]) : ALLOWED;
};
const capabilitiesRestricted1_25: CheckPod = (meta, spec) => (isWindows(spec) ? ALLOWED : capabilitiesRestricted1_22(meta, spec));

export const PRIVILEGE_CHECKS: Check[] = [
  { id: 'privileged', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: privileged1_0 }] },
  { id: 'capabilities_baseline', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: capabilitiesBaseline1_0 }] },
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    versions: [
      { minimumVersion: 8, checkPod: allowPrivilegeEscalation1_8 },
      { minimumVersion: 25, checkPod: allowPrivilegeEscalation1_25 },
    ],
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    versions: [
      { minimumVersion: 22, checkPod: capabilitiesRestricted1_22, overrideCheckIDs: ['capabilities_baseline'] },
      { minimumVersion: 25, checkPod: capabilitiesRestricted1_25, overrideCheckIDs: ['capabilities_baseline'] },
    ],
  },
];
