/**
 * The app-shell service worker (served as /sw.js by the build, see vite.config.ts): it caches
 * every file of the build when installed, so that after the first visit the page, its workers,
 * its wasm binaries and its styles load with the network cut. Pages are fetched network first
 * (a redeploy shows up at once) and fall back to the cached shell offline; the build's hashed
 * files are served from the cache. Requests to other origins (WebLLM's model downloads) and
 * non-GET requests pass through untouched. Nothing is downloaded beyond the build's own files.
 *
 * The build replaces `self.__APP_SHELL__` with the list of files and a version.
 */
/// <reference lib="webworker" />

/** What the build injects. */
interface AppShell {
  version: string;
  files: string[];
}

const sw = self as unknown as ServiceWorkerGlobalScope & { __APP_SHELL__: AppShell };
const shell = sw.__APP_SHELL__;
const CACHE = `dreamgym-shell-${shell.version}`;
const scope = new URL(sw.registration.scope);
const urlOf = (file: string): string => new URL(file, scope).href;
const INDEX = urlOf('index.html');

sw.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      // `cache: 'reload'`: the shell comes from the server, never from the HTTP cache.
      await cache.addAll([urlOf('./'), ...shell.files.map(urlOf)].map((url) => new Request(url, { cache: 'reload' })));
      await sw.skipWaiting();
    })(),
  );
});

sw.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith('dreamgym-shell-') && name !== CACHE) await caches.delete(name);
      await sw.clients.claim();
    })(),
  );
});

sw.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== scope.origin) return;
  if (request.mode === 'navigate') {
    event.respondWith(
      (async () => {
        try {
          return await fetch(request);
        } catch {
          // Offline: the cached shell, whatever the query string (?backend=...).
          const cached = (await caches.match(request, { ignoreSearch: true, ignoreVary: true, cacheName: CACHE })) ?? (await caches.match(INDEX, { ignoreVary: true, cacheName: CACHE }));
          if (cached) return cached;
          throw new TypeError(`offline and ${url.pathname} is not cached`);
        }
      })(),
    );
    return;
  }
  event.respondWith(
    (async () => {
      // ignoreVary: the server varies on Origin, which a module script's request has and the install's had not.
      const cached = await caches.match(request, { ignoreVary: true, cacheName: CACHE });
      return cached ?? fetch(request);
    })(),
  );
});
