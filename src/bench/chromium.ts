/**
 * How the project starts headless Chromium (tests, browser benchmarks, vite.config.ts): the
 * system browser, never a downloaded one, with flags that keep it off the network and give it a
 * WebGPU adapter even where the only one is the SwiftShader software adapter (see TESTING.md).
 * Node-side only; no dependencies, so the CLI, the benchmarks and the tests can all share it.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--enable-unsafe-webgpu',
];

/** The Chromium binary: `$CHROMIUM_PATH`, else Debian's `/usr/bin/chromium`. */
export function chromiumExecutable(): string {
  return process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
}
