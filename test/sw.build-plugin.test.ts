/**
 * The app-shell service worker's build plugin (src/sw/build-plugin.ts): it lists the output's
 * files (no source maps, not itself), versions them by content, and writes a compiled sw.js.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResolvedConfig } from 'vite';
import { afterEach, describe, expect, it } from 'vitest';
import { appShellServiceWorker, SERVICE_WORKER_FILE } from '../src/sw/build-plugin.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function run(outDir: string): Promise<{ version: string; files: string[]; code: string }> {
  const plugin = appShellServiceWorker();
  (plugin.configResolved as (c: ResolvedConfig) => void)({ root: '/', build: { outDir } } as unknown as ResolvedConfig);
  await (plugin.closeBundle as () => Promise<void>)();
  const code = await readFile(join(outDir, SERVICE_WORKER_FILE), 'utf8');
  const match = /^self\.__APP_SHELL__ = (.*);\n/.exec(code);
  if (!match?.[1]) throw new Error('no shell manifest at the top of sw.js');
  return { ...(JSON.parse(match[1]) as { version: string; files: string[] }), code };
}

describe('appShellServiceWorker', () => {
  it('caches every output file but source maps and itself, compiled to plain JavaScript', async () => {
    const outDir = await mkdtemp(join(tmpdir(), 'sw-plugin-'));
    dirs.push(outDir);
    await mkdir(join(outDir, 'assets'));
    await writeFile(join(outDir, 'index.html'), '<!doctype html>');
    await writeFile(join(outDir, 'assets', 'a-1.js'), 'x');
    await writeFile(join(outDir, 'assets', 'a-1.js.map'), '{}');
    await writeFile(join(outDir, 'assets', 'b.wasm'), new Uint8Array([0, 97, 115, 109]));
    const first = await run(outDir);
    expect(first.files).toEqual(['assets/a-1.js', 'assets/b.wasm', 'index.html']);
    expect(first.code).toMatch(/addEventListener\(['"]install['"]/);
    expect(first.code).not.toMatch(/\binterface\b|: ServiceWorkerGlobalScope/);
    // Running again (sw.js now exists) gives the same version; changing a file changes it.
    expect((await run(outDir)).version).toBe(first.version);
    await writeFile(join(outDir, 'index.html'), '<!doctype html><title>new</title>');
    expect((await run(outDir)).version).not.toBe(first.version);
  });
});
