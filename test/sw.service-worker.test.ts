/**
 * The app-shell service worker (src/sw/service-worker.ts), compiled as the build compiles it and
 * run against a stand-in of the service-worker scope: it caches and serves only the page's own
 * files, lets WebLLM's model downloads (other origins) through untouched, and never deletes
 * WebLLM's model caches.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import type { ResolvedConfig } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appShellServiceWorker, SERVICE_WORKER_FILE } from '../src/sw/build-plugin.ts';

type Listener = (event: Record<string, unknown>) => void;

let code = '';
let outDir = '';

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), 'sw-run-'));
  await writeFile(join(outDir, 'index.html'), '<!doctype html>');
  await writeFile(join(outDir, 'app.js'), 'x');
  const plugin = appShellServiceWorker();
  (plugin.configResolved as (c: ResolvedConfig) => void)({ root: '/', build: { outDir } } as unknown as ResolvedConfig);
  await (plugin.closeBundle as () => Promise<void>)();
  code = await readFile(join(outDir, SERVICE_WORKER_FILE), 'utf8');
});

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

/** Runs sw.js in a fresh scope at `https://app.example/`, with caches named `cacheNames`. */
function start(cacheNames: string[]) {
  const listeners = new Map<string, Listener>();
  const deleted: string[] = [];
  const added: string[] = [];
  const scope = {
    registration: { scope: 'https://app.example/' },
    clients: { claim: async () => undefined },
    skipWaiting: async () => undefined,
    addEventListener: (type: string, listener: Listener) => listeners.set(type, listener),
  };
  const caches = {
    keys: async () => cacheNames,
    delete: async (name: string) => {
      deleted.push(name);
      return true;
    },
    open: async () => ({ addAll: async (requests: Request[]) => added.push(...requests.map((r) => r.url)) }),
    match: async () => undefined,
  };
  runInNewContext(code, { self: scope, caches, fetch: async () => new Response('net'), URL, Request, Response, TypeError, console });
  /** Dispatches a fetch of `url`; whether the worker answered it itself. */
  const fetchEvent = (url: string, init: { method?: string; mode?: string } = {}): boolean => {
    let answered = false;
    const request = new Request(url, { method: init.method ?? 'GET' });
    Object.defineProperty(request, 'mode', { value: init.mode ?? 'cors' });
    listeners.get('fetch')?.({ request, respondWith: () => (answered = true) });
    return answered;
  };
  const lifecycle = async (type: 'install' | 'activate'): Promise<void> => {
    let done: Promise<unknown> = Promise.resolve();
    listeners.get(type)?.({ waitUntil: (p: Promise<unknown>) => (done = p) });
    await done;
  };
  return { fetchEvent, lifecycle, deleted, added };
}

describe('app-shell service worker', () => {
  it('lets model downloads from other origins through untouched, and serves its own files', () => {
    const sw = start([]);
    expect(sw.fetchEvent('https://huggingface.co/mlc-ai/SmolLM2-135M-Instruct-q0f32-MLC/resolve/main/params_shard_0.bin')).toBe(false);
    expect(sw.fetchEvent('https://cas-bridge.xethub.hf.co/xet-bridge-us/abc')).toBe(false);
    expect(sw.fetchEvent('https://raw.githubusercontent.com/mlc-ai/binary-mlc-llm-libs/main/web-llm-models/v0_2_86/x-webgpu.wasm')).toBe(false);
    // Its own origin: cached files and pages (so the stand-in does reach the handler).
    expect(sw.fetchEvent('https://app.example/app.js')).toBe(true);
    expect(sw.fetchEvent('https://app.example/', { mode: 'navigate' })).toBe(true);
    expect(sw.fetchEvent('https://app.example/app.js', { method: 'POST' })).toBe(false);
  });

  it('installs only the page’s own files, and on activation deletes only its own old shells', async () => {
    const sw = start(['dreamgym-shell-0000000000000000', 'webllm/model', 'webllm/config', 'webllm/wasm']);
    await sw.lifecycle('install');
    expect(sw.added.length).toBeGreaterThan(0);
    expect(sw.added.every((url) => url.startsWith('https://app.example/'))).toBe(true);
    await sw.lifecycle('activate');
    expect(sw.deleted).toEqual(['dreamgym-shell-0000000000000000']);
  });
});
