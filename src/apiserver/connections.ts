/**
 * One connection pool per API server for the whole process (client-node makes an undici Agent per
 * request): one Agent per set of TLS settings. Owns nothing else of the client.
 * Why: docs/adr/0010-one-connection-pool-per-api-server.md
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';

type CreateDispatcher = (cluster: unknown, agentOptions: Record<string, unknown>) => unknown;

const SHARED = Symbol('portcullis.sharedConnections');
/** The TLS settings that make one Agent differ from another. */
const SETTINGS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** Makes `config` reuse its connections; calling it again on the same config changes nothing. */
export function shareConnections(config: KubeConfig): KubeConfig {
  const target = config as unknown as { createDispatcher: CreateDispatcher; [SHARED]?: true };
  if (target[SHARED]) return config;
  const create = target.createDispatcher.bind(config);
  const agents = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const hash = createHash('sha256');
    hash.update(JSON.stringify([(cluster as { name?: string; server?: string } | null)?.name, (cluster as { server?: string } | null)?.server]));
    for (const setting of SETTINGS) hash.update(`\0${setting}=${String(agentOptions[setting] ?? '')}`);
    const key = hash.digest('hex');
    let agent = agents.get(key);
    if (agent === undefined) {
      agent = create(cluster, agentOptions);
      // Settings change rarely (a certificate rotation); the agents of older ones are let go.
      agents.clear();
      agents.set(key, agent);
    }
    return agent;
  };
  target[SHARED] = true;
  return config;
}
