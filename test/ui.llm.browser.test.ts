/**
 * The training page with a local LLM, in Chromium (vitest browser mode). The LLM worker is the
 * test double: the real worker host (WebLLM's handler, logit processor, side channel) around a
 * scripted engine (test/fixtures/llm-worker.ts), passed through the page's LLM options; the
 * model list and device facts are the test's, so the catalogue is known. Everything else is the
 * product: the setup panel's catalogue with cached state and models this device cannot run, the
 * download progress and Cancel, a quick dreamgym run with `sim: 'llm'` in the real training
 * worker whose experience model, prior and features reach the scripted engine through the LLM
 * bridge, and a failed load that says why and leaves the no-download path working.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import type { DeviceFacts } from '../src/llm/catalogue.ts';
import type { AppConfig } from '../src/llm/engine.ts';
import { mountTrainingPage, type TrainingPageHandle } from '../src/ui/TrainingPage.tsx';
import { CHARTS } from '../src/ui/charts/ChartsPanel.tsx';
import { freshStorage, setUpTinyRun } from './fixtures/training-page.ts';
import { RunIndex } from '../src/train/runs/records.ts';

/** The test's model list: two chat models that run here (one cached), two that cannot, an embedding model. */
const appConfig: AppConfig = {
  model_list: [
    { model: 'https://example.invalid/page-chat', model_id: 'PageChat-0.5B-q4f32_1-MLC', model_lib: 'https://example.invalid/page-chat.wasm', vram_required_MB: 300 },
    { model: 'https://example.invalid/page-cached', model_id: 'PageCached-135M-q0f32-MLC', model_lib: 'https://example.invalid/page-cached.wasm', vram_required_MB: 700 },
    { model: 'https://example.invalid/page-f16', model_id: 'PageHalf-1B-q4f16_1-MLC', model_lib: 'https://example.invalid/page-f16.wasm', vram_required_MB: 500 },
    { model: 'https://example.invalid/page-huge', model_id: 'PageHuge-70B-q4f32_1-MLC', model_lib: 'https://example.invalid/page-huge.wasm', vram_required_MB: 40000 },
    { model: 'https://example.invalid/page-embed', model_id: 'PageEmbed-q0f32-MLC-b4', model_lib: 'https://example.invalid/page-embed.wasm', vram_required_MB: 60, model_type: 1 },
  ],
};
/** Headless Chromium's adapter as it is: SwiftShader, no shader-f16 (memory budget 1024 MB). */
const device: DeviceFacts = { webgpu: true, shaderF16: false, isFallbackAdapter: true };

/** WebLLM's cache entries that make PageCached a cached model (its weight manifest and its one shard, library and chat config). */
const CACHED_BASE = 'https://example.invalid/page-cached/resolve/main/';
const CACHED_LIB = 'https://example.invalid/page-cached.wasm';

const mounted: { page: TrainingPageHandle; host: HTMLElement }[] = [];

beforeAll(async () => {
  const cache = await caches.open('webllm/model');
  await cache.put(`${CACHED_BASE}tensor-cache.json`, new Response(JSON.stringify({ records: [{ dataPath: 'params_shard_0.bin' }] })));
  await cache.put(`${CACHED_BASE}params_shard_0.bin`, new Response(new Uint8Array(8)));
  await (await caches.open('webllm/wasm')).put(CACHED_LIB, new Response(new Uint8Array(8)));
  await (await caches.open('webllm/config')).put(`${CACHED_BASE}mlc-chat-config.json`, new Response('{}'));
});

afterAll(async () => {
  const cache = await caches.open('webllm/model');
  await cache.delete(`${CACHED_BASE}tensor-cache.json`);
  await cache.delete(`${CACHED_BASE}params_shard_0.bin`);
  await (await caches.open('webllm/wasm')).delete(CACHED_LIB);
  await (await caches.open('webllm/config')).delete(`${CACHED_BASE}mlc-chat-config.json`);
});

afterEach(() => {
  for (const { page, host } of mounted.splice(0)) {
    page.destroy();
    host.remove();
  }
});

/** Mounts the page with the scripted LLM worker `variant` ('slow': loads in 1.5 s; 'fail-load': the hub is unreachable; 'stall'). */
function mount(variant: string, storage = freshStorage()) {
  const host = document.createElement('div');
  document.body.appendChild(host);
  let workers = 0;
  const page = mountTrainingPage(host, {
    storage,
    backend: 'wasm',
    llm: {
      appConfig,
      device,
      createWorker: () => {
        workers++;
        return new Worker(new URL('./fixtures/llm-worker.ts', import.meta.url), { type: 'module', name: variant });
      },
    },
  });
  mounted.push({ page, host });
  const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => {
    const node = host.querySelector<T>(`[data-testid="${id}"]`);
    if (!node) throw new Error(`no element with data-testid=${id}`);
    return node;
  };
  const has = (id: string): boolean => host.querySelector(`[data-testid="${id}"]`) !== null;
  return { page, host, byTestId, has, workers: () => workers };
}

const optionTexts = (select: HTMLSelectElement) =>
  [...select.querySelectorAll('option')].filter((o) => o.value !== '').map((o) => ({ id: o.value, text: o.textContent ?? '', disabled: o.disabled, group: (o.parentElement as HTMLOptGroupElement).label }));

describe('training page with a local LLM (browser, scripted LLM worker)', () => {
  it('lists the catalogue: sizes, cached state, and the models this device cannot run, disabled with why', async () => {
    const { page, byTestId, has, workers } = mount('slow');
    await page.ready;
    // Nothing is asked of the GPU or the cache until the LLM is picked.
    expect(page.store.llm.value.catalogue.status).toBe('unknown');
    expect(byTestId<HTMLInputElement>('setup-sim-retrieval').checked).toBe(true);
    await userEvent.click(byTestId('setup-sim-llm'));
    await expect.poll(() => has('setup-llm-model'), { timeout: 10_000 }).toBe(true);
    expect(byTestId('llm-device').textContent).toMatch(/software fallback.*without shader-f16/);

    const select = byTestId<HTMLSelectElement>('setup-llm-model');
    // The cached model is offered first: it needs no download (chosen once the render that lists it settles).
    await expect.poll(() => select.value, { timeout: 5_000 }).toBe('PageCached-135M-q0f32-MLC');
    let options = optionTexts(select);
    expect(options.map((o) => o.id)).toEqual(['PageChat-0.5B-q4f32_1-MLC', 'PageCached-135M-q0f32-MLC']);
    expect(options[1]?.text).toMatch(/135M parameters, 700 MB GPU memory, cached, no download/);
    expect(options[0]?.text).toMatch(/500M parameters, 300 MB GPU memory, download about 313 MB/);
    expect(byTestId('llm-model-facts').textContent).toMatch(/cached, no download/);
    expect(byTestId('llm-load').textContent).toBe('Load from the cache now');

    // The models this device cannot run are listed on request, disabled, with why.
    await userEvent.click(byTestId('setup-llm-show-all'));
    options = optionTexts(select);
    const half = options.find((o) => o.id === 'PageHalf-1B-q4f16_1-MLC');
    const huge = options.find((o) => o.id === 'PageHuge-70B-q4f32_1-MLC');
    expect(half).toMatchObject({ disabled: true, group: 'Cannot run on this device' });
    expect(half?.text).toMatch(/cannot run here, needs shader-f16, which this GPU does not offer/);
    expect(huge).toMatchObject({ disabled: true });
    expect(huge?.text).toMatch(/needs 40000 MB of GPU memory, more than the 1024 MB available/);
    expect(options.filter((o) => !o.disabled).map((o) => o.group)).toEqual(['Can run on this device', 'Can run on this device']);

    // Keyboard: the model list is reachable and changes with the arrow keys.
    select.focus();
    await userEvent.keyboard('{ArrowUp}');
    expect(select.value).toBe('PageChat-0.5B-q4f32_1-MLC');
    expect(byTestId('llm-load').textContent).toBe('Download and load now');
    // Picking the LLM loaded nothing.
    expect(workers()).toBe(0);
  });

  it('a GPU memory budget set under Advanced settings lists the models that fit it, within its bounds', async () => {
    const { page, byTestId, has } = mount('slow');
    await page.ready;
    await userEvent.click(byTestId('setup-sim-llm'));
    // The first listing imports WebLLM's client, which takes a while on a busy machine.
    await expect.poll(() => has('setup-llm-model'), { timeout: 30_000 }).toBe(true);
    const usable = (): string[] => optionTexts(byTestId<HTMLSelectElement>('setup-llm-model')).filter((o) => !o.disabled).map((o) => o.id);
    expect(byTestId('llm-device').textContent).toMatch(/Models may use 1,024 MB of GPU memory \(an estimate: Advanced settings can change it\)/);
    expect(usable()).not.toContain('PageHuge-70B-q4f32_1-MLC');

    await userEvent.click(byTestId('setup-advanced').querySelector('summary') as HTMLElement);
    const field = byTestId<HTMLInputElement>('advanced-vramBudgetMB');
    expect(field.placeholder).toBe('1024');
    expect(byTestId('advanced-vramBudgetMB-range').textContent).toMatch(/^256 to at most 262,144\. Blank: the estimate for this device \(1,024 MB\)/);
    // Out of bounds: refused, the catalogue stays as it was.
    await userEvent.fill(field, '999999');
    await userEvent.tab();
    expect(byTestId('setup-error').textContent).toBe('GPU memory for local models, MB: at most 262,144, got "999999"');
    expect(field.getAttribute('aria-invalid')).toBe('true');
    expect(usable()).not.toContain('PageHuge-70B-q4f32_1-MLC');

    // A large GPU's figure: the 40 GB model is offered.
    await userEvent.fill(field, '50000');
    await userEvent.tab();
    await expect.poll(usable, { timeout: 5_000 }).toContain('PageHuge-70B-q4f32_1-MLC');
    expect(has('setup-error')).toBe(false);
    expect(byTestId('llm-device').textContent).toMatch(/Models may use 50,000 MB of GPU memory \(set under Advanced settings\)/);
    // The f16 model still needs shader-f16.
    expect(usable()).not.toContain('PageHalf-1B-q4f16_1-MLC');

    // Blank again: the estimate.
    await userEvent.clear(field);
    await userEvent.tab();
    await expect.poll(usable, { timeout: 5_000 }).not.toContain('PageHuge-70B-q4f32_1-MLC');
  });

  it('shows the download progress, then trains a quick dreamgym run on the LLM through the bridge', async () => {
    const { page, byTestId, has } = mount('slow');
    await page.ready;
    await setUpTinyRun(byTestId, 1);
    await userEvent.click(byTestId('setup-sim-llm'));
    await expect.poll(() => has('setup-llm-model'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-llm-model'), 'PageChat-0.5B-q4f32_1-MLC');
    await userEvent.click(byTestId('setup-llm-prior'));
    await userEvent.click(byTestId('setup-llm-embeddings'));
    expect(byTestId<HTMLSelectElement>('setup-embedding-model').value).toBe('PageEmbed-q0f32-MLC-b4');
    await userEvent.click(byTestId('train-start'));

    // WebLLM's progress reports, as a bar and text, before the run starts.
    await expect.poll(() => has('llm-progress'), { timeout: 10_000 }).toBe(true);
    expect(byTestId('llm-progress-text').textContent).toMatch(/PageChat-0.5B-q4f32_1-MLC and PageEmbed-q0f32-MLC-b4: \d+%\. /);
    expect(page.store.state.value.status).toBe('idle');
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(true);
    await expect.poll(() => byTestId('llm-progress-text').textContent, { timeout: 10_000 }).toMatch(/Fetching param cache\[\d\/4\]/);
    await expect.poll(() => has('llm-ready'), { timeout: 15_000 }).toBe(true);
    expect(byTestId('llm-ready').textContent).toMatch(/Loaded: PageChat-0.5B-q4f32_1-MLC and PageEmbed-q0f32-MLC-b4/);
    // Where the load's time went: download, cache load and shader compilation apart.
    expect(byTestId('llm-load-timings').textContent).toMatch(/^Loaded in \d+\.\d s: download \d+\.\d s, loading from the cache \d+\.\d s, compiling GPU shaders \d+\.\d s, setup and the rest \d+\.\d s\.$/);
    const load = page.store.llm.value.load;
    const timings = load.status === 'ready' ? load.timings : null;
    expect(timings?.fetchMs).toBeGreaterThanOrEqual(1400);
    expect(timings?.cacheLoadMs).toBeGreaterThanOrEqual(250);
    expect(timings?.shaderMs).toBeGreaterThanOrEqual(350);

    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 60_000, interval: 100 }).toBe('done');
    const state = page.store.state.value;
    expect(state.record).toMatchObject({ config: { sim: 'llm', prior: 'llm', mode: 'dreamgym' }, llm: { chatModel: 'PageChat-0.5B-q4f32_1-MLC', embeddingModel: 'PageEmbed-q0f32-MLC-b4' } });
    expect(state.metrics).toHaveLength(1);
    expect(state.metrics[0]?.simCalls).toBeGreaterThan(0);
    for (const chart of CHARTS) expect(Number(byTestId(`chart-${chart.id}`).dataset['points']), chart.id).toBe(1);

    // The scripted engine, in the LLM worker, received the training worker's requests.
    const stats = (await page.llm.client?.runtimeStats()) ?? '';
    const [, chat, sim, embedding] = /scripted engine: (\d+) chat requests \((\d+) to the environment simulator\), (\d+) embedding requests/.exec(stats) ?? [];
    expect(Number(sim)).toBeGreaterThan(0);
    expect(Number(chat)).toBeGreaterThan(Number(sim));
    // One request reads the embedding width; the policy's features asked for the rest.
    expect(Number(embedding)).toBeGreaterThan(1);
    // ... through the page's bridge, which counted them.
    await expect.poll(() => page.store.llm.value.served.chat, { timeout: 5000 }).toBeGreaterThanOrEqual(Number(sim));
    expect(page.store.llm.value.served.embedding).toBe(Number(embedding));
    expect(byTestId('train-llm').textContent).toMatch(/Local LLM: PageChat-0.5B-q4f32_1-MLC, features from PageEmbed-q0f32-MLC-b4\. Requests the page’s LLM served: [1-9]\d* chat/);
    // The run closed its bridge.
    await expect.poll(() => page.llm.activeLinks, { timeout: 5000 }).toBe(0);
    // The comparison table tells the LLM run apart.
    expect(byTestId('comparison-table').querySelector('tbody tr[data-run-id]')?.textContent).toContain('dreamgym, on PageChat-0.5B-q4f32_1-MLC');
    // The loaded model now counts as cached.
    expect(optionTexts(byTestId<HTMLSelectElement>('setup-llm-model')).find((o) => o.id === 'PageChat-0.5B-q4f32_1-MLC')?.text).toMatch(/cached, no download/);
  });

  it('a failed load says why in the panel, starts no run, and the no-download path still trains', async () => {
    const { page, byTestId, has } = mount('fail-load');
    await page.ready;
    await setUpTinyRun(byTestId, 1);
    await userEvent.click(byTestId('setup-sim-llm'));
    await expect.poll(() => has('setup-llm-model'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-llm-model'), 'PageChat-0.5B-q4f32_1-MLC');
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => has('llm-error'), { timeout: 10_000 }).toBe(true);
    const error = byTestId('llm-error');
    expect(error.dataset['reason']).toBe('no-network');
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toMatch(/The model could not be downloaded\. Model PageChat-0\.5B-q4f32_1-MLC could not be downloaded/);
    expect(error.textContent).toMatch(/use the retrieval experience model, which needs no download/);
    // No run was made.
    expect(page.store.state.value).toMatchObject({ status: 'idle', runId: null });
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);

    await userEvent.click(byTestId('llm-use-retrieval'));
    expect(byTestId<HTMLInputElement>('setup-sim-retrieval').checked).toBe(true);
    expect(has('llm-error')).toBe(false);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 60_000, interval: 100 }).toBe('done');
    expect(page.store.state.value.record?.config.sim).toBe('retrieval');
    expect(page.store.state.value.record?.llm).toBeUndefined();
  });

  it('Cancel stops a load at once; the form is usable again', async () => {
    const { page, byTestId, has } = mount('stall');
    await page.ready;
    await userEvent.click(byTestId('setup-sim-llm'));
    await expect.poll(() => has('setup-llm-model'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-llm-model'), 'PageChat-0.5B-q4f32_1-MLC');
    await userEvent.click(byTestId('llm-load'));
    await expect.poll(() => has('llm-cancel'), { timeout: 10_000 }).toBe(true);
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(true);
    await userEvent.click(byTestId('llm-cancel'));
    await expect.poll(() => has('llm-error'), { timeout: 3000 }).toBe(true);
    expect(byTestId('llm-error').dataset['reason']).toBe('cancelled');
    expect(byTestId('llm-error').textContent).toMatch(/Loading cancelled\. Loading the model was cancelled\./);
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);
    expect(page.llm.client).toBeNull();
  });

  it('an LLM run interrupted by a reload waits for Resume, which loads its model and finishes the run', async () => {
    const names = freshStorage();
    const first = mount('ok', names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 30);
    await userEvent.click(first.byTestId('setup-sim-llm'));
    await expect.poll(() => first.has('setup-llm-model'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(first.byTestId<HTMLSelectElement>('setup-llm-model'), 'PageChat-0.5B-q4f32_1-MLC');
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    const runId = first.page.store.state.value.runId as string;
    // As a reload does: the page, its training worker and its LLM worker go away mid-run.
    first.page.destroy();
    first.host.remove();
    mounted.splice(0, 1);

    const second = mount('ok', names);
    await second.page.ready;
    const found = second.page.store.state.value;
    expect(found).toMatchObject({ runId, status: 'paused' });
    expect(found.iteration).toBeGreaterThanOrEqual(1);
    expect(second.byTestId('train-llm').textContent).toMatch(/Local LLM: PageChat-0\.5B-q4f32_1-MLC\..*Resume loads the model first/);
    // Loading a model is the person's call: nothing loaded by itself.
    expect(second.workers()).toBe(0);
    const index = await RunIndex.open({ name: names.index as string });
    try {
      // Unfinished either way: 'running' as the reload left it, or 'paused' when the worker saw its
      // LLM link close before it was terminated (both resume from the last stored iteration).
      expect(['running', 'paused']).toContain((await index.get(runId))?.status);
    } finally {
      index.close();
    }
    await userEvent.click(second.byTestId('train-resume'));
    await expect.poll(() => second.byTestId('train-status').dataset['state'], { timeout: 90_000, interval: 100 }).toBe('done');
    expect(second.workers()).toBe(1);
    expect(second.page.store.state.value).toMatchObject({ resumed: true, iteration: 30 });
    expect(second.page.store.state.value.metrics.map((m) => m.iteration)).toEqual(Array.from({ length: 30 }, (_, i) => i));
  }, 120_000);
});
