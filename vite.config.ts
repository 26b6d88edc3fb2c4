/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { playwright } from '@vitest/browser-playwright';
import { CHROMIUM_ARGS, chromiumExecutable } from './src/bench/chromium.ts';

/** Cross-origin isolation, so that SharedArrayBuffer and threaded tfjs-wasm work in the page. */
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  server: { host: '127.0.0.1', headers: isolationHeaders },
  preview: { host: '127.0.0.1', headers: isolationHeaders },
  worker: { format: 'es' },
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
