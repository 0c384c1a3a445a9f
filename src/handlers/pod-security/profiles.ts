/**
 * Pod Security checks of the kernel's confinement profiles (policy/check_appArmorProfile.go,
 * check_seccompProfile_baseline.go, check_seccompProfile_restricted.go, check_seLinuxOptions.go,
 * check_procMount_baseline.go, check_procMount_restricted.go): AppArmor, seccomp, SELinux and
 * /proc mount types, in fields and in the older annotations, each revision with the version it
 * applies from. Pure; the frame is checks.ts'.
 */
import { goQuote } from '../../go/strconv.ts';
import { ALLOWED, byBytes, containersNamed, forbidden, inUserNamespace, isWindows, joinQuote, nameOf, pluralize, sortedSet, visitContainers, type Check, type CheckPod, type Meta } from './checks.ts';

const annotationsOf = (meta: Meta): [string, string][] => (meta.annotations && typeof meta.annotations === 'object' ? Object.entries(meta.annotations).map(([k, v]) => [k, String(v ?? '')]) : []);
const typeOf = (profile: any): string => (typeof profile?.type === 'string' ? profile.type : '');

// AppArmor ------------------------------------------------------------------------------------

const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';
const allowedAppArmorAnnotation = (v: string) => v === '' || v === 'runtime/default' || v.startsWith('localhost/');
const allowedAppArmorType = (t: string) => t === 'RuntimeDefault' || t === 'Localhost';

const appArmorProfile1_0: CheckPod = (meta, spec) => {
  const setters: string[] = [];
  const badValues: string[] = [];
  const podProfile = spec.securityContext?.appArmorProfile;
  if (podProfile != null && !allowedAppArmorType(typeOf(podProfile))) {
    setters.push('pod');
    badValues.push(typeOf(podProfile));
  }
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    const profile = c.securityContext?.appArmorProfile;
    if (profile != null && !allowedAppArmorType(typeOf(profile))) {
      bad.push(nameOf(c));
      badValues.push(typeOf(profile));
    }
  });
  if (bad.length) setters.push(containersNamed(bad));
  // Only the containers' own fields at fault name containers alone.
  const containersOnly = setters.length === 1 && bad.length > 0;
  const annotations = annotationsOf(meta)
    .filter(([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && !allowedAppArmorAnnotation(v))
    .map(([k, v]) => `${k}=${goQuote(v)}`)
    .sort(byBytes);
  const values = [...sortedSet(badValues), ...annotations];
  if (annotations.length) setters.push(pluralize('annotation', 'annotations', annotations.length));
  if (!setters.length) return ALLOWED;
  return forbidden(
    pluralize('forbidden AppArmor profile', 'forbidden AppArmor profiles', values.length),
    `${setters.join(' and ')} must not set AppArmor profile type to ${joinQuote(values)}`,
    containersOnly && !annotations.length ? bad : undefined,
  );
};

// seccomp -------------------------------------------------------------------------------------

const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_ANNOTATION_PREFIX = 'container.seccomp.security.alpha.kubernetes.io/';
const validSeccompType = (t: string) => t === 'Localhost' || t === 'RuntimeDefault';
const validSeccompAnnotation = (v: string) => v === 'runtime/default' || v === 'docker/default' || v.startsWith('localhost/');

const seccompProfileBaseline1_0: CheckPod = (meta, spec) => {
  const annotations = new Map(annotationsOf(meta));
  const bad: string[] = [];
  const pod = annotations.get(SECCOMP_POD_ANNOTATION);
  if (pod !== undefined && !validSeccompAnnotation(pod)) bad.push(`${SECCOMP_POD_ANNOTATION}=${goQuote(pod)}`);
  visitContainers(spec, (c) => {
    const key = SECCOMP_CONTAINER_ANNOTATION_PREFIX + nameOf(c);
    const value = annotations.get(key);
    if (value !== undefined && !validSeccompAnnotation(value)) bad.push(`${key}=${goQuote(value)}`);
  });
  const distinct = sortedSet(bad);
  return distinct.length ? forbidden('seccompProfile', `forbidden ${pluralize('annotation', 'annotations', distinct.length)} ${distinct.join(', ')}`) : ALLOWED;
};

/** The explicit seccomp settings (pod and containers) that are not allowed, and whether the pod sets an allowed one. */
function seccompSetters(spec: Record<string, any>) {
  const setters: string[] = [];
  const badValues: string[] = [];
  const implicit: string[] = [];
  const podProfile = spec.securityContext?.seccompProfile;
  let podSet = false;
  if (podProfile != null) {
    if (!validSeccompType(typeOf(podProfile))) {
      setters.push('pod');
      badValues.push(typeOf(podProfile));
    } else podSet = true;
  }
  const bad: string[] = [];
  visitContainers(spec, (c) => {
    const profile = c.securityContext?.seccompProfile;
    if (profile != null) {
      if (!validSeccompType(typeOf(profile))) {
        bad.push(nameOf(c));
        badValues.push(typeOf(profile));
      }
    } else if (!podSet) implicit.push(nameOf(c));
  });
  if (bad.length) setters.push(containersNamed(bad));
  // The pod's own profile at fault: no container to name.
  return { setters, badValues: sortedSet(badValues), implicit, containers: setters[0] === 'pod' ? undefined : bad };
}

const seccompProfileBaseline1_19: CheckPod = (_meta, spec) => {
  const { setters, badValues, containers } = seccompSetters(spec);
  return setters.length ? forbidden('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(badValues)}`, containers) : ALLOWED;
};

const seccompProfileRestricted1_19: CheckPod = (_meta, spec) => {
  const { setters, badValues, implicit, containers } = seccompSetters(spec);
  if (setters.length) return forbidden('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(badValues)}`, containers);
  if (implicit.length) return forbidden('seccompProfile', `pod or ${containersNamed(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`, implicit);
  return ALLOWED;
};
const seccompProfileRestricted1_25: CheckPod = (meta, spec) => (isWindows(spec) ? ALLOWED : seccompProfileRestricted1_19(meta, spec));

// SELinux -------------------------------------------------------------------------------------

const SELINUX_TYPES_1_0 = ['', 'container_t', 'container_init_t', 'container_kvm_t'];
const SELINUX_TYPES_1_31 = [...SELINUX_TYPES_1_0, 'container_engine_t'];

function seLinuxOptions(allowedTypes: string[]): CheckPod {
  const allowed = new Set(allowedTypes);
  return (_meta, spec) => {
    const setters: string[] = [];
    const badTypes: string[] = [];
    let setUser = false;
    let setRole = false;
    const valid = (opts: any): boolean => {
      let ok = true;
      const type = typeof opts.type === 'string' ? opts.type : '';
      if (!allowed.has(type)) {
        ok = false;
        badTypes.push(type);
      }
      if (typeof opts.user === 'string' && opts.user !== '') {
        ok = false;
        setUser = true;
      }
      if (typeof opts.role === 'string' && opts.role !== '') {
        ok = false;
        setRole = true;
      }
      return ok;
    };
    const podOptions = spec.securityContext?.seLinuxOptions;
    if (podOptions != null && !valid(podOptions)) setters.push('pod');
    const bad: string[] = [];
    visitContainers(spec, (c) => {
      const options = c.securityContext?.seLinuxOptions;
      if (options != null && !valid(options)) bad.push(nameOf(c));
    });
    if (bad.length) setters.push(containersNamed(bad));
    if (!setters.length) return ALLOWED;
    const data: string[] = [];
    const types = sortedSet(badTypes);
    if (types.length) data.push(`${pluralize('type', 'types', types.length)} ${joinQuote(types)}`);
    if (setUser) data.push('user may not be set');
    if (setRole) data.push('role may not be set');
    return forbidden('seLinuxOptions', `${setters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}`, setters[0] === 'pod' ? undefined : bad);
  };
}

// procMount -----------------------------------------------------------------------------------

const procMount1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  const types: string[] = [];
  visitContainers(spec, (c) => {
    const procMount = c.securityContext?.procMount;
    if (procMount == null || procMount === 'Default') return;
    bad.push(nameOf(c));
    types.push(String(procMount));
  });
  return bad.length ? forbidden('procMount', `${containersNamed(bad)} must not set securityContext.procMount to ${joinQuote(sortedSet(types))}`, bad) : ALLOWED;
};
const procMount1_35Baseline: CheckPod = (meta, spec) => (inUserNamespace(spec) ? ALLOWED : procMount1_0(meta, spec));

export const PROFILE_CHECKS: Check[] = [
  { id: 'appArmorProfile', level: 'baseline', versions: [{ minimumVersion: 0, checkPod: appArmorProfile1_0 }] },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    versions: [
      { minimumVersion: 0, checkPod: seccompProfileBaseline1_0 },
      { minimumVersion: 19, checkPod: seccompProfileBaseline1_19 },
    ],
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    versions: [
      { minimumVersion: 19, checkPod: seccompProfileRestricted1_19, overrideCheckIDs: ['seccompProfile_baseline'] },
      { minimumVersion: 25, checkPod: seccompProfileRestricted1_25, overrideCheckIDs: ['seccompProfile_baseline'] },
    ],
  },
  {
    id: 'seLinuxOptions',
    level: 'baseline',
    versions: [
      { minimumVersion: 0, checkPod: seLinuxOptions(SELINUX_TYPES_1_0) },
      { minimumVersion: 31, checkPod: seLinuxOptions(SELINUX_TYPES_1_31) },
    ],
  },
  {
    id: 'procMount',
    level: 'baseline',
    versions: [
      { minimumVersion: 0, checkPod: procMount1_0 },
      { minimumVersion: 35, checkPod: procMount1_35Baseline },
    ],
  },
  // From v1.35 restricted keeps the /proc mount default even in a user namespace.
  { id: 'procMount_restricted', level: 'restricted', versions: [{ minimumVersion: 35, checkPod: procMount1_0, overrideCheckIDs: ['procMount'] }] },
];
