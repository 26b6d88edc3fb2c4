/**
 * The training page in Chromium (vitest browser mode) with the real training worker: a tiny
 * dreamgym run set up through the form's advanced inputs trains off the main thread, the charts
 * receive one point per iteration, the evaluation adds a row to the comparison table; and a run
 * interrupted mid-way (the page torn down, as a reload does) resumes from IndexedDB with its
 * earlier metrics and iteration count.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import uPlot from 'uplot';
import { mountTrainingPage, type TrainingPageHandle } from '../src/ui/TrainingPage.tsx';
import { CHARTS } from '../src/ui/charts/ChartsPanel.tsx';
import { asinhRange, asinhSplits, chartData, ITERATION_AXIS, yAxis, yScale } from '../src/ui/charts/MetricChart.tsx';
import type { StorageNames, TrainingCommand, TrainingEvent } from '../workers/training.protocol.ts';
import { wrapTrainingWorker, type TrainingWorkerHandle } from '../workers/training.client.ts';
import { setUpTinyRun } from './fixtures/training-page.ts';
import { toJsonl } from '../src/core/jsonl.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { openReplayStore } from '../src/replay/index.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import { offlineSeedData } from '../src/train/setup.ts';
import { RunIndex, type PageRunRecord } from '../src/train/runs/records.ts';

async function readRecord(names: StorageNames, runId: string): Promise<PageRunRecord | undefined> {
  const index = await RunIndex.open({ name: names.index as string });
  try {
    return await index.get(runId);
  } finally {
    index.close();
  }
}

const mounted: TrainingPageHandle[] = [];
const hosts: HTMLElement[] = [];

afterEach(() => {
  for (const page of mounted.splice(0)) page.destroy();
  for (const host of hosts.splice(0)) host.remove();
});

/** Fresh database names per test, so runs of other tests (and earlier test runs) do not show. */
function storage(): StorageNames {
  const tag = `${Date.now()}-${Math.floor(Math.random() * 1e9)}`;
  return { replay: `test-replay-${tag}`, index: `test-runs-${tag}` };
}

function mount(names: StorageNames): { page: TrainingPageHandle; byTestId: <T extends HTMLElement = HTMLElement>(id: string) => T } {
  const host = document.createElement('div');
  document.body.appendChild(host);
  hosts.push(host);
  const page = mountTrainingPage(host, { storage: names, backend: 'wasm' });
  mounted.push(page);
  const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => {
    const node = host.querySelector<T>(`[data-testid="${id}"]`);
    if (!node) throw new Error(`no element with data-testid=${id}`);
    return node;
  };
  return { page, byTestId };
}

/** A finished run's record, made `agoMs` before now. */
function doneRecord(name: string, agoMs: number): PageRunRecord {
  const at = Date.now() - agoMs;
  return {
    id: `${name}-${at}`,
    createdAt: at,
    updatedAt: at + 1000,
    config: parseTrainingConfig({ env: 'shop', mode: 'dreamgym', iterations: 2 }, 'quick'),
    status: 'done',
    iteration: 2,
    totalIterations: 2,
    realTransitions: 0,
    offlineTransitions: 0,
    trainWallMs: 1000,
  };
}

async function putRecords(names: StorageNames, records: readonly PageRunRecord[]): Promise<void> {
  const index = await RunIndex.open({ name: names.index as string });
  try {
    for (const r of records) await index.put(r);
  } finally {
    index.close();
  }
}

/** A training worker whose first iteration never ends, and which never reads its later messages. */
function stuckWorker(names: StorageNames): { start: () => Promise<TrainingWorkerHandle>; terminated: () => number } {
  let terminated = 0;
  const start = async (): Promise<TrainingWorkerHandle> => {
    let listener: (event: TrainingEvent) => void = () => undefined;
    return {
      send(command: TrainingCommand) {
        if (command.kind !== 'start') return;
        void (async () => {
          const now = Date.now();
          const record: PageRunRecord = { id: command.runId, createdAt: now, updatedAt: now, config: command.config, status: 'running', iteration: 0, totalIterations: 3, realTransitions: 0, offlineTransitions: 0, trainWallMs: 0 };
          const index = await RunIndex.open({ name: names.index as string });
          await index.put(record);
          index.close();
          listener({ kind: 'started', record, metrics: [] });
          listener({ kind: 'iteration-start', runId: command.runId, iteration: 0, totalIterations: 3, phase: 'synthetic' });
        })();
      },
      onEvent(l: (event: TrainingEvent) => void) {
        listener = l;
        return () => undefined;
      },
      terminate() {
        terminated++;
      },
    };
  };
  return { start, terminated: () => terminated };
}

const points = (byTestId: (id: string) => HTMLElement, id: string): number => Number(byTestId(`chart-${id}`).dataset['points']);

describe('training page (browser)', () => {
  it('trains a tiny run in the worker: charts get points, evaluation adds a comparison row', async () => {
    const names = storage();
    const { page, byTestId } = mount(names);
    await page.ready;
    expect(byTestId('comparison-table').querySelectorAll('tbody tr[data-run-id]')).toHaveLength(0);
    // The no-download experience model is the default; the local LLM is offered next to it.
    expect(byTestId<HTMLInputElement>('setup-sim-retrieval').checked).toBe(true);
    expect(byTestId<HTMLInputElement>('setup-sim-llm').disabled).toBe(false);
    await setUpTinyRun(byTestId, 3);
    // The menus name what blank stands for here (from scratch, a preset's demonstrations), and a choice reaches the run.
    expect(byTestId<HTMLSelectElement>('advanced-grounding').options[0]?.textContent).toBe('Default (off)');
    expect(byTestId<HTMLSelectElement>('advanced-validationCriterion').options[0]?.textContent).toBe('Default (simulator)');
    expect(byTestId<HTMLSelectElement>('advanced-grounding').disabled).toBe(false);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-mode'), 'real');
    expect(byTestId<HTMLSelectElement>('advanced-grounding').disabled).toBe(true);
    expect(byTestId('advanced-grounding-help').textContent).toMatch(/Only for dreamgym and s2r/);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-mode'), 'dreamgym');
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('advanced-grounding'), 'calibrated');
    // Where the charts sit inside their panel: the first points must not move them (a relayout of the whole panel).
    const chartOffset = (): number => byTestId('chart-success').getBoundingClientRect().top - byTestId('charts-panel').getBoundingClientRect().top;
    const offsetBefore = chartOffset();
    await userEvent.click(byTestId('train-start'));

    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    for (const chart of CHARTS) expect(points(byTestId, chart.id), chart.id).toBe(3);
    expect(chartOffset()).toBe(offsetBefore);
    // uPlot drew into its canvas.
    expect(byTestId('chart-success').querySelector('canvas')).not.toBeNull();
    // The V_tau distribution: mean and max per iteration, with a legend naming both.
    const vtau = CHARTS.find((c) => c.id === 'vtau');
    const metrics = page.store.state.value.metrics;
    expect(chartData(vtau as (typeof CHARTS)[number], metrics)).toEqual([[1, 2, 3], metrics.map((x) => x.vTauMean), metrics.map((x) => x.vTauMax)]);
    expect(byTestId('chart-vtau').querySelector('.u-legend')?.textContent).toMatch(/mean.*max/s);
    // The legend names the lines; it has no cursor value to show ("--").
    expect(byTestId('chart-vtau').querySelector('.u-legend')?.textContent).not.toContain('--');
    expect(byTestId('iteration-count').textContent).toBe('3 / 3');
    expect(byTestId('evaluation').textContent).toMatch(/Held-out success \d+\.\d% \[\d+\.\d%, \d+\.\d%\] \(95% CI\) on 3 test tasks/);
    const rows = byTestId('comparison-table').querySelectorAll('tbody tr[data-run-id]');
    expect(rows).toHaveLength(1);
    expect(rows[0]?.textContent).toContain('dreamgym');
    expect(page.store.state.value.record?.config.grounding).toBe('calibrated');
    expect(rows[0]?.querySelectorAll('td')[1]?.textContent).toBe('dreamgym, simulator grounded');
    // Synthetic-only training: no real transitions.
    expect(rows[0]?.querySelectorAll('td')[6]?.textContent).toBe('0');
    expect(page.store.state.value.metrics.map((m) => m.phase)).toEqual(['synthetic', 'synthetic', 'synthetic']);
  });

  it('trains household with the page’s defaults (warm start from behaviour cloning) past its second iteration', async () => {
    const { page, byTestId } = mount(storage());
    await page.ready;
    // Only the environment changes: every other field keeps the value the page opens with.
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-env'), 'household');
    expect(byTestId<HTMLInputElement>('setup-warm-start').checked).toBe(true);
    await userEvent.click(byTestId('train-start'));
    // A failure ends the wait at once.
    await expect.poll(() => page.store.state.value.status === 'failed' || page.store.state.value.iteration >= 2, { timeout: 150_000, interval: 200 }).toBe(true);
    const state = page.store.state.value;
    expect(state.error).toBeNull();
    expect(state.iteration).toBeGreaterThanOrEqual(2);
    expect(state.record?.config).toMatchObject({ env: 'household', mode: 'dreamgym', warmStart: 'sft' });
    expect(state.metrics.slice(0, 2).map((m) => m.phase)).toEqual(['sft', 'sft']);
    // Behaviour cloning has no rollouts: no mean reward (not 0) beside its accuracy.
    const reward = CHARTS.find((c) => c.id === 'reward') as (typeof CHARTS)[number];
    expect(chartData(reward, state.metrics.slice(0, 2))[1]).toEqual([null, null]);
    expect(byTestId('chart-reward').querySelector('figcaption')?.textContent).toMatch(/none while behaviour cloning/);
    await userEvent.click(byTestId('train-pause'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 60_000, interval: 100 }).toBe('paused');
  }, 240_000);

  it('refuses a huge size with “at most N”; Stop ends a run stuck making its seed data, which then rests and stays put on reload', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 3, { noisyEpisodes: '99999999999' });
    expect(first.byTestId('advanced-noisyEpisodes-range').textContent).toContain('at most 1,000,000');
    await userEvent.click(first.byTestId('train-start'));
    expect(first.byTestId('setup-error').textContent).toMatch(/Offline noisy episodes: at most 1,000,000, got "99999999999"/);
    expect(first.page.store.state.value.status).toBe('idle');

    // The largest value allowed: generating a million episodes keeps the worker busy far longer than the test.
    await userEvent.fill(first.byTestId<HTMLInputElement>('advanced-noisyEpisodes'), '1000000');
    await userEvent.click(first.byTestId('train-start'));
    const runId = first.page.store.state.value.runId as string;
    expect(runId).not.toBeNull();
    // Until the worker has written the run down there is nothing to stop.
    await expect.poll(async () => (await readRecord(names, runId))?.status, { timeout: 20_000, interval: 100 }).toBe('seeding');
    await userEvent.click(first.byTestId('train-stop'));
    await expect.poll(() => first.byTestId('train-status').dataset['state'], { timeout: 5_000, interval: 50 }).toBe('paused');
    expect(first.byTestId('train-status').textContent).toMatch(/Stopped while the run was starting/);
    expect(first.byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);
    expect(first.byTestId<HTMLButtonElement>('train-resume').disabled).toBe(false);
    expect(first.byTestId<HTMLButtonElement>('delete-run').disabled).toBe(false);
    expect(first.byTestId<HTMLButtonElement>('clear-storage').disabled).toBe(false);
    expect(await readRecord(names, runId)).toMatchObject({ status: 'paused' });
    first.page.destroy();
    mounted.splice(mounted.indexOf(first.page), 1);

    // A reload shows the run at rest instead of starting it again.
    const second = mount(names);
    await second.page.ready;
    expect(second.page.store.state.value).toMatchObject({ runId, status: 'paused' });
    expect(second.byTestId('train-status').textContent).toMatch(/Stopped while the run was starting/);
    await userEvent.click(second.byTestId('delete-run'));
    await userEvent.click(second.byTestId('confirm-yes'));
    await expect.poll(async () => readRecord(names, runId), { timeout: 10_000, interval: 100 }).toBeUndefined();
  });

  it('Stop inside an iteration that does not end: the page ends the worker after its wait and the run rests at its last iteration', async () => {
    const names = storage();
    const host = document.createElement('div');
    document.body.appendChild(host);
    hosts.push(host);
    const stuck = stuckWorker(names);
    const page = mountTrainingPage(host, { storage: names, startWorker: stuck.start, stopWaitMs: 300 });
    mounted.push(page);
    await page.ready;
    const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => host.querySelector<T>(`[data-testid="${id}"]`) as T;
    await setUpTinyRun(byTestId, 3);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => page.store.state.value.status, { timeout: 10_000, interval: 20 }).toBe('running');
    const runId = page.store.state.value.runId as string;
    await userEvent.click(byTestId('train-stop'));
    expect(page.store.state.value.status).toBe('stopping');
    await expect.poll(() => page.store.state.value.status, { timeout: 5_000, interval: 20 }).toBe('paused');
    expect(stuck.terminated()).toBe(1);
    expect(byTestId('train-status').textContent).toMatch(/Stopped inside iteration 1, which had not ended 0.3 s later: the run rests at iteration 0/);
    expect(await readRecord(names, runId)).toMatchObject({ status: 'paused', iteration: 0 });
    expect(byTestId<HTMLButtonElement>('delete-run').disabled).toBe(false);
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);
  });

  it('Delete ends and removes a run that makes no progress, then shows the latest run left', async () => {
    const names = storage();
    const earlier = doneRecord('earlier', 60_000);
    await putRecords(names, [earlier]);
    const host = document.createElement('div');
    document.body.appendChild(host);
    hosts.push(host);
    const stuck = stuckWorker(names);
    const page = mountTrainingPage(host, { storage: names, startWorker: stuck.start, stallMs: 400 });
    mounted.push(page);
    await page.ready;
    const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => host.querySelector<T>(`[data-testid="${id}"]`) as T;
    expect(page.store.state.value).toMatchObject({ runId: earlier.id, status: 'done' });

    await setUpTinyRun(byTestId, 3);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => page.store.state.value.status, { timeout: 10_000, interval: 20 }).toBe('running');
    const runId = page.store.state.value.runId as string;
    // Making progress: no delete.
    expect(byTestId<HTMLButtonElement>('delete-run').disabled).toBe(true);
    // Silent for longer than the stall time: Delete is offered.
    await expect.poll(() => byTestId<HTMLButtonElement>('delete-run').disabled, { timeout: 5_000, interval: 20 }).toBe(false);
    expect(page.store.state.value).toMatchObject({ status: 'running', stalled: true });
    expect(byTestId('train-stalled').textContent).toMatch(/no progress/);
    await userEvent.click(byTestId('delete-run'));
    expect(host.querySelector('#confirm-text')?.textContent).toMatch(/^This run has made no progress for a while: deleting it ends its training first\. Delete run /);
    await userEvent.click(byTestId('confirm-yes'));
    await expect.poll(() => byTestId('data-status').textContent, { timeout: 10_000, interval: 50 }).toBe(`Deleted run ${runId}.`);
    expect(stuck.terminated()).toBe(1);
    expect(await readRecord(names, runId)).toBeUndefined();
    await expect.poll(() => page.store.state.value.runId, { timeout: 5_000, interval: 20 }).toBe(earlier.id);
    expect(byTestId('train-status').textContent).toBe('Done: shop dreamgym, 2 iterations.');
  });

  it('deleting the run shown reopens on the latest run left; deleting the last leaves the empty view', async () => {
    const names = storage();
    const earlier = doneRecord('earlier', 60_000);
    const later = doneRecord('later', 30_000);
    await putRecords(names, [earlier, later]);
    const { page, byTestId } = mount(names);
    await page.ready;
    expect(page.store.state.value).toMatchObject({ runId: later.id, status: 'done' });

    await userEvent.click(byTestId('delete-run'));
    await userEvent.click(byTestId('confirm-yes'));
    await expect.poll(() => byTestId('data-status').textContent, { timeout: 10_000, interval: 50 }).toBe(`Deleted run ${later.id}.`);
    // The view reopens on the latest run left, not on an empty page.
    await expect.poll(() => page.store.state.value.runId, { timeout: 5_000, interval: 20 }).toBe(earlier.id);
    expect(byTestId('train-status').textContent).toBe('Done: shop dreamgym, 2 iterations.');
    expect([...byTestId<HTMLSelectElement>('train-run').options].map((o) => o.value)).toEqual([earlier.id]);
    expect(byTestId('data-run').textContent).toBe(`Run: ${earlier.id}`);

    // The last run deleted: the empty view, with nothing left to choose.
    await userEvent.click(byTestId('delete-run'));
    await userEvent.click(byTestId('confirm-yes'));
    await expect.poll(() => byTestId('data-status').textContent, { timeout: 10_000, interval: 50 }).toBe(`Deleted run ${earlier.id}.`);
    expect(page.store.state.value).toMatchObject({ runId: null, status: 'idle', runs: [] });
    expect(byTestId('train-status').textContent).toBe('No run yet: set one up and press Start training.');
    expect(() => byTestId('train-run')).toThrow();
    expect(byTestId('data-run').textContent).toMatch(/^No run yet/);
    expect(byTestId<HTMLButtonElement>('delete-run').disabled).toBe(true);
  });

  it('reopens on the latest finished run with its charts, result and exports, and switches runs from the list', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    expect(() => first.byTestId('train-run')).toThrow();
    await setUpTinyRun(first.byTestId, 2);
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    const older = first.page.store.state.value.runId as string;
    const olderResult = first.byTestId('evaluation').textContent;
    await setUpTinyRun(first.byTestId, 3);
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.runId !== older && first.byTestId('train-status').dataset['state'] === 'done', { timeout: 50_000, interval: 100 }).toBe(true);
    const latest = first.page.store.state.value.runId as string;
    const latestResult = first.byTestId('evaluation').textContent;
    first.page.destroy();
    mounted.splice(mounted.indexOf(first.page), 1);

    // As a reload: the latest run is on show, as it ended.
    const second = mount(names);
    await second.page.ready;
    expect(second.page.store.state.value).toMatchObject({ runId: latest, status: 'done', iteration: 3 });
    expect(second.byTestId('train-status').textContent).toMatch(/^Done: shop dreamgym, 3 iterations\.$/);
    for (const chart of CHARTS) expect(points(second.byTestId, chart.id), chart.id).toBe(3);
    expect(second.byTestId('evaluation').textContent).toBe(latestResult);
    expect(second.byTestId('data-run').textContent).toBe(`Run: ${latest}`);
    for (const kind of ['checkpoint', 'dataset', 'chat', 'report']) expect(second.byTestId<HTMLButtonElement>(`export-${kind}`).disabled, kind).toBe(false);
    const list = second.byTestId<HTMLSelectElement>('train-run');
    expect([...list.options].map((o) => o.value)).toEqual([latest, older]);
    expect(list.value).toBe(latest);

    await userEvent.selectOptions(list, older);
    await expect.poll(() => second.page.store.state.value.runId, { timeout: 10_000, interval: 50 }).toBe(older);
    expect(second.page.store.state.value.status).toBe('done');
    await expect.poll(() => points(second.byTestId, 'loss'), { timeout: 5_000 }).toBe(2);
    expect(second.byTestId('evaluation').textContent).toBe(olderResult);
    expect(second.byTestId('iteration-count').textContent).toBe('2 / 2');
    await expect.poll(() => second.byTestId('data-run').textContent, { timeout: 5_000 }).toBe(`Run: ${older}`);
  });

  it('the iteration axis ticks whole iterations, even over two points', async () => {
    const host = document.createElement('div');
    document.body.appendChild(host);
    hosts.push(host);
    const ticks = async (axis: uPlot.Axis): Promise<number[]> => {
      let seen: number[] = [];
      const plot = new uPlot(
        {
          width: 320,
          height: 160,
          scales: { x: { time: false } },
          axes: [{ ...axis, values: (_u, splits) => ((seen = splits), splits.map(String)) }, {}],
          series: [{}, {}],
        },
        [
          [1, 2],
          [0, 1],
        ],
        host,
      );
      // uPlot lays out and draws after the current task.
      await expect.poll(() => seen.length).toBeGreaterThan(0);
      plot.destroy();
      return seen;
    };
    const ours = await ticks(ITERATION_AXIS);
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.every(Number.isInteger), ours.join(' ')).toBe(true);
    // uPlot's own steps would not: the check can fail.
    expect((await ticks({ ...ITERATION_AXIS, incrs: undefined })).every(Number.isInteger)).toBe(false);
  });

  it('the KL chart keeps later iterations readable after a first spike', async () => {
    const host = document.createElement('div');
    document.body.appendChild(host);
    hosts.push(host);
    const kl = CHARTS.find((c) => c.id === 'kl') as (typeof CHARTS)[number];
    // A run from scratch: the first update's KL, then the usual ones.
    const data: uPlot.AlignedData = [
      [1, 2, 3],
      [29, 0.4, 0.3],
    ];
    let labels: string[] = [];
    const gap = async (scale: uPlot.Scale, axis: uPlot.Axis = {}): Promise<number> => {
      let drawn = false;
      const values = axis.values;
      const y: uPlot.Axis = typeof values === 'function' ? { ...axis, values: (u, splits, ...rest) => (labels = values(u, splits, ...rest).map(String)) } : axis;
      const plot = new uPlot(
        { width: 320, height: 160, scales: { x: { time: false }, y: scale }, axes: [{}, y], series: [{}, {}], hooks: { draw: [() => void (drawn = true)] } },
        data,
        host,
      );
      await expect.poll(() => drawn).toBe(true);
      // Pixels between the second iteration's value and 0 (y grows downwards).
      const px = plot.valToPos(0, 'y') - plot.valToPos(0.4, 'y');
      plot.destroy();
      return px;
    };
    expect(kl.scale).toBe('asinh');
    // Ticks: 0 and the powers of ten down to a hundredth of the largest value, either sign.
    expect(asinhSplits(...(asinhRange(0.3, 29) as [number, number]))).toEqual([0, 1, 10]);
    expect(asinhSplits(...(asinhRange(-0.5, 3) as [number, number]))).toEqual([-0.1, 0, 0.1, 1]);
    expect(asinhRange(0.3, 29)).toEqual([0, 43.5]);
    expect(asinhRange(0, 0)).toEqual([0, 1]);
    expect(await gap(yScale(kl), yAxis(kl))).toBeGreaterThan(20);
    // Every tick labelled (uPlot's own filter blanks some on a log-like axis).
    expect(labels).toEqual(['0', '1', '10']);
    // On a linear axis 0.4 sits within a few pixels of 0: the check can fail.
    expect(await gap(yScale({ ...kl, scale: 'linear' }))).toBeLessThan(5);
  });

  it('resumes a run interrupted mid-way (page torn down) with its earlier metrics and iteration count', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 8);
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(2);
    const runId = first.page.store.state.value.runId;
    // As a reload does: the page and its worker go away mid-run.
    first.page.destroy();
    mounted.splice(mounted.indexOf(first.page), 1);

    const second = mount(names);
    await second.page.ready;
    const state = second.page.store.state.value;
    expect(state.runId).toBe(runId);
    expect(state.iteration).toBeGreaterThanOrEqual(2);
    const earlier = state.metrics.length;
    expect(earlier).toBeGreaterThanOrEqual(2);
    expect(points(second.byTestId, 'loss')).toBe(earlier);

    await expect.poll(() => second.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    const final = second.page.store.state.value;
    expect(final.resumed).toBe(true);
    expect(final.metrics.map((m) => m.iteration)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(points(second.byTestId, 'success')).toBe(8);
    expect(second.byTestId('iteration-count').textContent).toBe('8 / 8');
    expect(second.byTestId('comparison-table').querySelectorAll('tbody tr[data-run-id]')).toHaveLength(1);
  });

  it('pauses at an iteration boundary, resumes, and stops and evaluates from the buttons', async () => {
    const { page, byTestId } = mount(storage());
    await page.ready;
    // Many iterations, so the run is still going whenever a button is pressed.
    await setUpTinyRun(byTestId, 200);
    expect(byTestId<HTMLButtonElement>('train-pause').disabled).toBe(true);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    await userEvent.click(byTestId('train-pause'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 30_000, interval: 50 }).toBe('paused');
    const paused = page.store.state.value.iteration;
    expect(page.store.state.value.metrics).toHaveLength(paused);
    expect(byTestId<HTMLButtonElement>('train-resume').disabled).toBe(false);
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);
    expect(byTestId('comparison-table').querySelectorAll('tbody tr[data-run-id]')).toHaveLength(0);

    await userEvent.click(byTestId('train-resume'));
    await expect.poll(() => page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(paused + 2);
    await userEvent.click(byTestId('train-stop'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    const done = page.store.state.value;
    expect(done.iteration).toBeLessThan(200);
    expect(done.metrics.map((m) => m.iteration)).toEqual(Array.from({ length: done.iteration }, (_, i) => i));
    expect(points(byTestId, 'kl')).toBe(done.iteration);
    expect(done.evaluation?.iteration).toBe(done.iteration);
    const row = byTestId('comparison-table').querySelector('tbody tr[data-run-id]');
    expect(row?.textContent).toContain(`${done.iteration} (stopped)`);
  });

  it('a second page does not take over a run another page is training: it follows it read-only, controls disabled', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 200);
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(1);

    const second = mount(names);
    await second.page.ready;
    const seen = second.page.store.state.value;
    expect(seen.runId).toBe(first.page.store.state.value.runId);
    expect(seen.readOnly).toBe(true);
    expect(second.byTestId('train-status').dataset['state']).toBe('running');
    expect(second.byTestId('train-readonly').textContent).toMatch(/Another tab or window is training this run/);
    for (const id of ['train-pause', 'train-resume', 'train-stop', 'train-start']) expect(second.byTestId<HTMLButtonElement>(id).disabled, id).toBe(true);
    // Live: the second page's iterations and charts follow the first page's training.
    const at = second.page.store.state.value.iteration;
    await expect.poll(() => second.page.store.state.value.iteration, { timeout: 30_000, interval: 50 }).toBeGreaterThan(at);
    expect(second.page.store.state.value.iteration).toBeLessThanOrEqual(first.page.store.state.value.iteration);
    await expect.poll(() => points(second.byTestId, 'success'), { timeout: 5_000 }).toBeGreaterThan(at);
    expect(second.byTestId('iteration-count').textContent).toMatch(/^\d+ \/ 200$/);
    // The first page trains on undisturbed.
    expect(first.page.store.state.value.status).toBe('running');
    expect(first.page.store.state.value.readOnly).toBe(false);
  });

  it('when the page that trains a run closes, the read-only page takes it over with Resume', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 200);
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    const second = mount(names);
    await second.page.ready;
    expect(second.page.store.state.value.readOnly).toBe(true);
    const runId = second.page.store.state.value.runId;

    // The first page goes away mid-run (its worker ends, its lock is let go).
    first.page.destroy();
    await expect.poll(() => second.page.store.state.value.readOnly, { timeout: 10_000, interval: 50 }).toBe(false);
    expect(second.byTestId('train-status').dataset['state']).toBe('paused');
    expect(() => second.byTestId('train-readonly')).toThrow();
    expect(second.byTestId<HTMLButtonElement>('train-resume').disabled).toBe(false);
    const from = second.page.store.state.value.iteration;
    await userEvent.click(second.byTestId('train-resume'));
    await expect.poll(() => second.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThan(from);
    expect(second.page.store.state.value).toMatchObject({ runId, status: 'running', readOnly: false });
    expect(second.byTestId<HTMLButtonElement>('train-pause').disabled).toBe(false);
  });

  it('trains a new run on seed data from a JSONL file; a malformed file names the line and writes nothing', async () => {
    const names = storage();
    const { page, byTestId } = mount(names);
    await page.ready;
    await setUpTinyRun(byTestId, 1);
    // The user's data: recorded shop episodes of another seed than the run's generated ones would be.
    const data = offlineSeedData(getEnvSpec('shop'), parseTrainingConfig({ env: 'shop', mode: 'dreamgym', seed: 5, offline: { expertEpisodes: 5, noisyEpisodes: 3, extraTasks: 0 } }));
    const text = toJsonl({ tasks: data.tasks, trajectories: data.trajectories });
    const lines = text.trimEnd().split('\n');
    const broken = `${[lines[0], '{"v":1,"type":"trajectory","trajectory":{}}', ...lines.slice(1)].join('\n')}\n`;

    await userEvent.upload(byTestId('setup-seed-file'), new File([broken], 'broken.jsonl'));
    expect(byTestId('setup-seed-help').textContent).toContain('broken.jsonl');
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 30_000, interval: 50 }).toBe('failed');
    expect(byTestId('train-status').textContent).toMatch(/line 2/);
    const failedId = page.store.state.value.runId as string;
    const index = await RunIndex.open({ name: names.index as string });
    expect(await index.list()).toEqual([]);
    const replay = await openReplayStore({ name: names.replay as string, broadcast: false });
    try {
      expect(await replay.getRun(failedId)).toBeUndefined();

      await userEvent.upload(byTestId('setup-seed-file'), new File([text], 'mine.jsonl'));
      await userEvent.click(byTestId('train-start'));
      await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 40_000, interval: 50 }).toBe('done');
      const runId = page.store.state.value.runId as string;
      const record = await index.get(runId);
      expect(record?.seedData).toEqual({ file: 'mine.jsonl', tasks: data.tasks.length, trajectories: data.trajectories.length });
      expect(record?.offlineTransitions).toBe(data.trajectories.reduce((n, t) => n + t.steps.length, 0));
      // The replay buffer's offline episodes are the file's, not generated ones.
      const stored = await replay.getTrajectoryRecords({ runId, source: 'offline' });
      expect(stored.map((t) => t.id).sort()).toEqual(data.trajectories.map((t) => t.id).sort());
    } finally {
      index.close();
      await replay.close();
    }
  });

  it('a run seeded from a file resumes on that file’s episodes after a reload', async () => {
    const names = storage();
    const first = mount(names);
    await first.page.ready;
    await setUpTinyRun(first.byTestId, 6);
    const data = offlineSeedData(getEnvSpec('shop'), parseTrainingConfig({ env: 'shop', mode: 'dreamgym', seed: 9, offline: { expertEpisodes: 5, noisyEpisodes: 3, extraTasks: 0 } }));
    const steps = data.trajectories.reduce((n, t) => n + t.steps.length, 0);
    await userEvent.upload(first.byTestId('setup-seed-file'), new File([toJsonl({ tasks: data.tasks, trajectories: data.trajectories })], 'mine.jsonl'));
    await userEvent.click(first.byTestId('train-start'));
    await expect.poll(() => first.page.store.state.value.iteration, { timeout: 40_000, interval: 50 }).toBeGreaterThanOrEqual(1);
    const runId = first.page.store.state.value.runId as string;
    first.page.destroy();
    mounted.splice(mounted.indexOf(first.page), 1);

    const second = mount(names);
    await second.page.ready;
    expect(second.page.store.state.value.runId).toBe(runId);
    await expect.poll(() => second.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    expect(second.page.store.state.value.resumed).toBe(true);
    const index = await RunIndex.open({ name: names.index as string });
    try {
      // The resumed run was prepared on the stored file episodes, not on generated ones.
      expect(await index.get(runId)).toMatchObject({ seedData: { file: 'mine.jsonl' }, offlineTransitions: steps, iteration: 6 });
    } finally {
      index.close();
    }
  });

  it('trains on the tfjs backend chosen in the setup panel and shows it, the adapter and why', async () => {
    const { page, byTestId } = mount(storage());
    await page.ready;
    // The page's own preference (here the mount's `wasm`, in the built page `?backend=`) is the first choice.
    expect(byTestId<HTMLSelectElement>('setup-backend').value).toBe('wasm');
    expect([...byTestId<HTMLSelectElement>('setup-backend').options].map((o) => o.value)).toEqual(['auto', 'webgpu', 'wasm', 'cpu']);
    await setUpTinyRun(byTestId, 1);
    await userEvent.selectOptions(byTestId<HTMLSelectElement>('setup-backend'), 'cpu');
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 40_000, interval: 50 }).toBe('done');
    expect(page.store.state.value.backend).toMatchObject({ backend: 'cpu', requested: 'cpu' });
    expect(byTestId('train-backend').textContent).toMatch(/tfjs backend: cpu\. cpu requested\./);
    expect(byTestId('train-adapter').textContent).toBe('No WebGPU adapter was asked for or found.');
    expect(byTestId<HTMLSelectElement>('setup-backend').disabled).toBe(false);
  });

  it('does not hang on "Starting" when the training worker cannot load (404): it fails with a message, Start works again', async () => {
    const host = document.createElement('div');
    document.body.appendChild(host);
    hosts.push(host);
    let workers = 0;
    const page = mountTrainingPage(host, {
      storage: storage(),
      startWorker: async () => {
        workers++;
        return wrapTrainingWorker(new Worker(new URL('/no-such-training-worker-404.js', location.href), { type: 'module' }));
      },
    });
    mounted.push(page);
    await page.ready;
    const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => host.querySelector<T>(`[data-testid="${id}"]`) as T;
    await setUpTinyRun(byTestId, 2);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 15_000, interval: 50 }).toBe('failed');
    expect(byTestId('train-status').textContent).toMatch(/the training worker failed: .*Reload the page/);
    expect(byTestId<HTMLButtonElement>('train-start').disabled).toBe(false);
    // A second try starts a fresh worker rather than waiting on the dead one.
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => workers, { timeout: 15_000 }).toBe(2);
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 15_000, interval: 50 }).toBe('failed');
  });
});
