/**
 * A model load's time split into WebLLM's phases from its progress texts (as WebLLM 0.2.86 words
 * them), on a clock the test moves.
 */
import { describe, expect, it } from 'vitest';
import { LoadTimer, loadPhase, progressPhase } from '../src/llm/load-timings.ts';

describe('load timings', () => {
  it('names the phase of each WebLLM progress text', () => {
    expect(progressPhase('Start to fetch params')).toBe('fetch');
    expect(progressPhase('Fetching param cache[2/4]: 64MB fetched. 50% completed, 3 secs elapsed.')).toBe('fetch');
    expect(progressPhase('Loading model from cache[1/4]: 32MB loaded. 25% completed, 0 secs elapsed.')).toBe('cache');
    expect(progressPhase('Loading GPU shader modules[3/9]: 33% completed, 1 secs elapsed.')).toBe('shader');
    expect(progressPhase('Finish loading on WebGPU - nvidia')).toBe('other');
    expect(loadPhase('Loading GPU shader modules[3/9]: 33% completed')).toBe('load');
    expect(loadPhase('Fetching param cache[1/4]')).toBe('fetch');
  });

  it('counts the time before each report to the phase that report ends: setup, download, cache load, shaders', () => {
    let now = 1000;
    const timer = new LoadTimer(() => now);
    const at = (t: number, text: string): void => {
      now = t;
      timer.report(text);
    };
    at(1300, 'Start to fetch params');
    at(2300, 'Fetching param cache[1/2]: 32MB fetched.');
    at(3300, 'Fetching param cache[2/2]: 64MB fetched.');
    at(3500, 'Loading model from cache[1/2]: 32MB loaded.');
    at(3700, 'Loading model from cache[2/2]: 64MB loaded.');
    at(4200, 'Loading GPU shader modules[1/2]: 50% completed');
    at(5200, 'Loading GPU shader modules[2/2]: 100% completed');
    at(5250, 'Finish loading on WebGPU');
    now = 5300;
    timer.finish();
    expect(timer.result()).toEqual({ fetchMs: 2000, cacheLoadMs: 400, shaderMs: 1500, setupMs: 300, loadMs: 2000, totalMs: 4300 });
  });

  it('a cached model spends nothing downloading', () => {
    let now = 0;
    const timer = new LoadTimer(() => now);
    for (const [t, text] of [
      [100, 'Start to fetch params'],
      [600, 'Loading model from cache[1/1]: 32MB loaded.'],
      [900, 'Loading GPU shader modules[1/1]: 100% completed'],
    ] as const) {
      now = t;
      timer.report(text);
    }
    timer.finish();
    expect(timer.result()).toEqual({ fetchMs: 0, cacheLoadMs: 500, shaderMs: 300, setupMs: 100, loadMs: 800, totalMs: 900 });
  });
});
