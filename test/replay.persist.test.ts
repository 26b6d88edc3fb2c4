/**
 * Persistence in a real browser profile: Vite's dev server serves a fixture page that uses the
 * replay store; Chromium (playwright-core, persistent profile) writes, reloads the page and reads
 * back, then closes, relaunches the same profile and reads again. A fresh profile sees nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayFixture } from './fixtures/replay-page.ts';
import { CHROMIUM_ARGS, chromiumExecutable } from '../src/bench/chromium.ts';

const root = resolve(import.meta.dirname, '..');

let server: ViteDevServer | null = null;
let url = '';
const tmpDirs: string[] = [];

async function tmp(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  tmpDirs.push(dir);
  return dir;
}

beforeAll(async () => {
  server = await createServer({
    root,
    configFile: false,
    logLevel: 'silent',
    cacheDir: join(await tmp('dreamgym-replay-vite-'), 'cache'),
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
    optimizeDeps: { noDiscovery: true, include: [] },
  });
  await server.listen();
  const address = server.httpServer?.address() as AddressInfo | null;
  if (!address) throw new Error('vite dev server has no address');
  url = `http://127.0.0.1:${address.port}/test/fixtures/replay-page.html`;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function launch(profile: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.launchPersistentContext(profile, { executablePath: chromiumExecutable(), args: [...CHROMIUM_ARGS] });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready', undefined, { timeout: 30_000 }).catch((e: unknown) => {
    throw new Error(`fixture page did not load: ${String(e)} ${errors.join('; ')}`);
  });
  return { context, page };
}

function call<K extends keyof ReplayFixture>(page: Page, name: K, ...args: Parameters<ReplayFixture[K]>): Promise<Awaited<ReturnType<ReplayFixture[K]>>> {
  return page.evaluate(
    ([n, a]) => (window as unknown as { replayFixture: Record<string, (...x: unknown[]) => unknown> }).replayFixture[n as string]?.(...(a as unknown[])),
    [name, args] as const,
  ) as Promise<Awaited<ReturnType<ReplayFixture[K]>>>;
}

describe('replay store persistence in a real Chromium profile', () => {
  it('survives a page reload and a browser restart; a fresh profile has nothing', async () => {
    const profile = await tmp('dreamgym-replay-profile-');
    let { context, page } = await launch(profile);
    const written = (await call(page, 'write', 'persist', 0, 6)) as { ok: boolean; counts: { transitions: number } };
    expect(written.ok).toBe(true);
    expect(written.counts.transitions).toBe(18);
    const before = await call(page, 'read', 'persist');
    expect(before).not.toBeNull();

    await page.reload();
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    expect(await call(page, 'read', 'persist')).toEqual(before);
    // Add more after the reload, so the restart must keep both writes.
    expect(((await call(page, 'write', 'persist', 6, 2)) as { ok: boolean }).ok).toBe(true);
    const afterReload = await call(page, 'read', 'persist');
    await context.close();

    ({ context, page } = await launch(profile));
    const afterRestart = (await call(page, 'read', 'persist')) as { counts: { trajectories: number } };
    expect(afterRestart).toEqual(afterReload);
    expect(afterRestart.counts.trajectories).toBe(8);
    await context.close();

    const other = await launch(await tmp('dreamgym-replay-profile-'));
    expect(await call(other.page, 'read', 'persist')).toBeNull();
    await other.context.close();
  }, 90_000);
});
