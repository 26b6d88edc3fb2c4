/**
 * The browser benchmark drivers open their pages (src/bench/*-page.html) in headless Chromium
 * through Vite and get figures back, at tiny sizes (presence and sanity only, no timing thresholds).
 */
import { describe, expect, it } from 'vitest';
import { benchPolicyBrowser } from '../src/bench/policy-browser.ts';
import { benchReplayBrowser } from '../src/bench/replay-browser.ts';

describe('browser benchmark pages', () => {
  it('replay-browser: the page runs the replay benchmark over Chromium IndexedDB', async () => {
    const rows = await benchReplayBrowser({ dim: 16, transitions: 1000, retrievalSizes: [500, 1000], batchTransitions: 500, queries: 3 });
    const names = rows.map((r) => r.name);
    expect(names[0]).toBe('chromium/IndexedDB: insert 1,000 transitions (16-dim embeddings, 500 per transaction)');
    expect(names).toContain('chromium/IndexedDB: top-8 at 1,000 x 16, retrieve() median of 3');
    // Chromium's clock is coarse, so at this size a scan can read 0 ms (its rates are then
    // Infinity or NaN): only the insert rate is checked for a value.
    expect(Number.isFinite(rows[0]?.value) && (rows[0]?.value as number) > 0).toBe(true);
    for (const r of rows) {
      expect(typeof r.value, r.name).toBe('number');
      expect(r.note).toMatch(/Chromium \d+/);
    }
  }, 180_000);

  it('policy-browser: the page times wasm and WebGPU interleaved and reports the ratio per size', async () => {
    const rows = await benchPolicyBrowser({ sizes: [8], dim: 16, hiddenDim: 8, reps: 2 });
    const names = rows.map((r) => r.name);
    expect(names.some((n) => /^GRPO update, wasm \(Chromium, \d+ threads?\), 8 decisions/.test(n)), names.join('\n')).toBe(true);
    // Chromium runs with --enable-unsafe-webgpu, so there is an adapter (SwiftShader without a GPU).
    expect(names.some((n) => /^GRPO update, WebGPU on .*, 8 decisions/.test(n)), names.join('\n')).toBe(true);
    const ratio = rows.find((r) => /^WebGPU on .* \/ wasm throughput ratio, 8 decisions$/.test(r.name));
    expect(ratio?.note).toBe('median of 2 side-by-side repetitions');
    for (const r of rows) expect(Number.isFinite(r.value) && r.value > 0, r.name).toBe(true);
  }, 180_000);
});
