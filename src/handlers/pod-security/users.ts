/**
 * Pod Security checks of the user a container runs as (policy/check_runAsNonRoot.go,
 * check_runAsUser.go): non-root required, uid 0 refused, both relaxed for Pods in a user
 * namespace from v1.35. Pure; the frame is checks.ts'.
 */
import { ALLOWED, containersNamed, forbidden, inUserNamespace, nameOf, visitContainers, type Check, type CheckPod } from './checks.ts';

const runAsNonRoot1_0: CheckPod = (_meta, spec) => {
  const setters: string[] = [];
  let podNonRoot = false;
  const podValue = spec.securityContext?.runAsNonRoot;
  if (podValue != null) {
    if (podValue === false) setters.push('pod');
    else podNonRoot = true;
  }
  const explicit: string[] = [];
  const implicit: string[] = [];
  visitContainers(spec, (c) => {
    const value = c.securityContext?.runAsNonRoot;
    if (value != null) {
      if (value === false) explicit.push(nameOf(c));
    } else if (!podNonRoot) implicit.push(nameOf(c));
  });
  if (explicit.length) setters.push(containersNamed(explicit));
  // The pod's own setting at fault: no container to name.
  if (setters.length) return forbidden('runAsNonRoot != true', `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`, podValue === false ? undefined : explicit);
  if (implicit.length) return forbidden('runAsNonRoot != true', `pod or ${containersNamed(implicit)} must set securityContext.runAsNonRoot=true`, implicit);
  return ALLOWED;
};
const runAsNonRoot1_35: CheckPod = (meta, spec) => (inUserNamespace(spec) ? ALLOWED : runAsNonRoot1_0(meta, spec));

const runAsUser1_23: CheckPod = (_meta, spec) => {
  const setters: string[] = [];
  if (spec.securityContext?.runAsUser === 0) setters.push('pod');
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    if (c.securityContext?.runAsUser === 0) bad.push(nameOf(c));
  });
  if (bad.length) setters.push(containersNamed(bad));
  return setters.length ? forbidden('runAsUser=0', `${setters.join(' and ')} must not set runAsUser=0`, setters[0] === 'pod' ? undefined : bad) : ALLOWED;
};
const runAsUser1_35: CheckPod = (meta, spec) => (inUserNamespace(spec) ? ALLOWED : runAsUser1_23(meta, spec));

export const USER_CHECKS: Check[] = [
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    versions: [
      { minimumVersion: 0, checkPod: runAsNonRoot1_0 },
      { minimumVersion: 35, checkPod: runAsNonRoot1_35 },
    ],
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    versions: [
      { minimumVersion: 23, checkPod: runAsUser1_23 },
      { minimumVersion: 35, checkPod: runAsUser1_35 },
    ],
  },
];
