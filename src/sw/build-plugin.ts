/**
 * The Vite build plugin that makes the app-shell service worker (./service-worker.ts): once the
 * build is written, it lists every file of the output, derives a version from their contents,
 * compiles the worker and writes it as `sw.js` at the root of the output with that list, so the
 * service worker caches exactly this build. Node-side only (vite.config.ts).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { transformWithOxc, type Plugin } from 'vite';

/** The file name of the service worker in the build output. */
export const SERVICE_WORKER_FILE = 'sw.js';

/** Files of the output the shell does not need offline. */
const skip = (file: string): boolean => file === SERVICE_WORKER_FILE || file.endsWith('.map');

/** The plugin (build only). */
export function appShellServiceWorker(source = resolve(import.meta.dirname, 'service-worker.ts')): Plugin {
  let outDir = '';
  return {
    name: 'dreamgym-app-shell-service-worker',
    apply: 'build',
    // Tells the page to register the worker: builds only (the dev server and its tests have none).
    config: () => ({ define: { 'import.meta.env.APP_SHELL_SERVICE_WORKER': JSON.stringify(SERVICE_WORKER_FILE) } }),
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    async closeBundle() {
      const entries = await readdir(outDir, { recursive: true, withFileTypes: true });
      const files = entries
        .filter((e) => e.isFile())
        .map((e) => relative(outDir, join(e.parentPath, e.name)).split(sep).join('/'))
        .filter((f) => !skip(f))
        .sort();
      const hash = createHash('sha256');
      for (const file of files) hash.update(file).update(await readFile(join(outDir, file)));
      const shell = { version: hash.digest('hex').slice(0, 16), files };
      const { code } = await transformWithOxc(await readFile(source, 'utf8'), source, { lang: 'ts' });
      await writeFile(join(outDir, SERVICE_WORKER_FILE), `self.__APP_SHELL__ = ${JSON.stringify(shell)};\n${code}`);
    },
  };
}
