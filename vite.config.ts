/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { playwright } from '@vitest/browser-playwright';
import { CHROMIUM_ARGS, chromiumExecutable } from './src/bench/chromium.ts';
import { appShellServiceWorker } from './src/sw/build-plugin.ts';

/** Cross-origin isolation, so that SharedArrayBuffer and threaded tfjs-wasm work in the page. */
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

/**
 * The Content-Security-Policy of the served page (vite preview, which `npm start` runs): its own
 * scripts, styles, workers and data only, plus
 * - 'wasm-unsafe-eval': tfjs's WebAssembly backend compiles its module;
 * - blob: workers and scripts: threaded tfjs-wasm starts its pthreads from a Blob of its own code;
 * - the hosts WebLLM downloads from (model weights on Hugging Face and its CDNs, model libraries
 *   on raw.githubusercontent.com), only when a person asks for a model;
 * and nothing inline, no eval, no plugins, no framing. Not on the dev server, whose hot reload
 * injects inline styles.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval' blob:",
  "worker-src 'self' blob:",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self' https://huggingface.co https://*.huggingface.co https://*.hf.co https://raw.githubusercontent.com",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export default defineConfig({
  server: { host: '127.0.0.1', headers: isolationHeaders },
  preview: { host: '127.0.0.1', headers: { ...isolationHeaders, 'Content-Security-Policy': CONTENT_SECURITY_POLICY } },
  worker: { format: 'es' },
  // The app-shell service worker (sw.js), so the page loads and trains offline after one visit.
  plugins: [appShellServiceWorker()],
  // Preact's JSX (automatic runtime), as tsconfig.json's jsxImportSource says for the type checker.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  // Pre-bundle up front so the browser test runner never reloads mid-run on a late discovery.
  optimizeDeps: { include: ['zod', 'minisearch', 'idb', 'comlink', '@mlc-ai/web-llm', 'preact', 'preact/hooks', 'preact/compat', 'preact/jsx-runtime', '@preact/signals', 'uplot'] },
  // No minification: tfjs-backend-wasm starts its pthreads from its factory's source text
  // (`factory.toString()`), which a minifier breaks by renaming what the function refers to.
  build: { target: 'es2022', sourcemap: true, minify: false },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.browser.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['test/**/*.browser.test.ts'],
          testTimeout: 60_000,
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: { executablePath: chromiumExecutable(), args: [...CHROMIUM_ARGS] },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
