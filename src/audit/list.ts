/**
 * audit: reading a resource's stored objects as the audit reads them, page by page
 * (`limit`/`continue`), each page's objects handed on before the next is asked for, so that no
 * list of every object of a kind is ever held at once. GETs only: what audits never writes to
 * what it reads. Shared by the background audit (scanner.ts) and `portcullis audit` (src/cli);
 * what an object means is the caller's.
 */
import type * as k8s from '@kubernetes/client-node';
import { getJson } from '../apiserver/get-json.ts';

export type KubeItem = { metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string>; resourceVersion?: string }; [key: string]: unknown };

interface Page {
  items?: KubeItem[];
  metadata?: { continue?: string; resourceVersion?: string };
}

/**
 * LISTs `path` (a collection: `resourcePath`, listable-resources.ts) `pageSize` objects at a time, awaiting
 * `onItem` for each in order; stops after the page during which `stopped` turned true. Resolves
 * to the last page's resourceVersion (where a watch of the collection starts).
 */
export async function listPaged(config: k8s.KubeConfig, path: string, pageSize: number, onItem: (item: KubeItem) => Promise<void>, stopped: () => boolean = () => false): Promise<{ resourceVersion: string | undefined }> {
  let next: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const query = new URLSearchParams({ limit: String(pageSize), ...(next ? { continue: next } : {}) });
    const page = await getJson<Page>(config, `${path}?${query}`);
    for (const item of page.items ?? []) await onItem(item);
    next = page.metadata?.continue || undefined;
    resourceVersion = page.metadata?.resourceVersion;
  } while (next && !stopped());
  return { resourceVersion };
}
