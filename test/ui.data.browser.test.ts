/**
 * The data panel in Chromium with the real training worker: a tiny run's exports (checkpoint
 * file, dreamgym JSONL, chat JSONL, run report), a malformed JSONL import refused with the line
 * named and nothing written, the exported checkpoint evaluated as a new run with the same result,
 * and deleting a run and clearing all storage after confirmation; storage use and persistence;
 * a corrupt record found by the check and removed after confirmation.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import { parseJsonl } from '../src/core/jsonl.ts';
import { parseCheckpoint } from '../src/policy/checkpoint.ts';
import { chatSystemPrompt, parseChatJsonl } from '../src/train/chat.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import type { RunReport } from '../src/ui/data/run-data.ts';
import { editRecord } from './fixtures/replay-corrupt.ts';
import { freshStorage, mountPage, setUpTinyRun, unmountPage, type MountedPage } from './fixtures/training-page.ts';

const mounted: MountedPage[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) unmountPage(m);
});

const evaluatedRows = (m: MountedPage): HTMLTableRowElement[] => [...m.byTestId('comparison-table').querySelectorAll<HTMLTableRowElement>('tbody tr[data-run-id]')];

describe('data panel (browser)', () => {
  it('exports a run, refuses a malformed import, evaluates the exported checkpoint alike, deletes and clears', async () => {
    const names = freshStorage();
    const m = mountPage(names);
    mounted.push(m);
    await m.page.ready;
    expect(m.byTestId<HTMLButtonElement>('export-checkpoint').disabled).toBe(true);
    await setUpTinyRun(m.byTestId, 3);
    await userEvent.click(m.byTestId('train-start'));
    await expect.poll(() => m.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    const runId = m.page.store.state.value.runId as string;
    const original = m.page.store.state.value.evaluation;
    expect(original).not.toBeNull();

    // Exports.
    for (const kind of ['checkpoint', 'dataset', 'chat', 'report']) {
      await userEvent.click(m.byTestId(`export-${kind}`));
      await expect.poll(() => m.saved.length, { timeout: 10_000 }).toBe(['checkpoint', 'dataset', 'chat', 'report'].indexOf(kind) + 1);
    }
    const [checkpointFile, datasetFile, chatFile, reportFile] = m.saved;
    const checkpoint = parseCheckpoint(await (checkpointFile?.data as Blob).arrayBuffer());
    expect(checkpoint.weights.length).toBeGreaterThan(0);
    expect(checkpointFile?.name).toMatch(/\.dgckpt$/);
    const dataset = parseJsonl(await (datasetFile?.data as Blob).text());
    const stored = await m.page.data.data.trajectories(runId);
    expect(dataset.trajectories.map((t) => t.id).sort()).toEqual(stored.map((t) => t.id).sort());
    expect(dataset.tasks.length).toBeGreaterThan(0);
    const chat = parseChatJsonl(await (chatFile?.data as Blob).text());
    expect(chat).toHaveLength(stored.length);
    expect(new Set(chat.map((c) => c.source))).toEqual(new Set(['offline', 'synthetic']));
    // Each conversation opens with the run's environment as it declares itself.
    for (const c of chat) expect(c.messages[0]!.content).toBe(chatSystemPrompt(c.env, getEnvSpec(c.env).description));
    const report = JSON.parse(await (reportFile?.data as Blob).text()) as RunReport;
    expect(report.run.id).toBe(runId);
    expect(report.run.config.iterations).toBe(3);
    expect(report.metrics.map((x) => x.iteration)).toEqual([0, 1, 2]);
    expect(m.byTestId('data-status').textContent).toContain(reportFile?.name);

    // A malformed import: the error names the line, the buffer is unchanged.
    const lines = (await (datasetFile?.data as Blob).text()).trimEnd().split('\n');
    const trajectoryAt = lines.findIndex((l) => l.includes('"type":"trajectory"'));
    const fresh = lines.slice(trajectoryAt, trajectoryAt + 3).map((l, i) => l.replace(/"id":"([^"]+)","taskId"/, `"id":"copy-${i}","taskId"`));
    const broken = [fresh[0], fresh[1]?.replace('"reward":', '"reward":"x","was":'), fresh[2]].join('\n');
    await userEvent.upload(m.byTestId('import-jsonl'), new File([`${broken}\n`], 'broken.jsonl'));
    await expect.poll(() => m.byTestId('data-status').dataset['kind'], { timeout: 10_000 }).toBe('error');
    expect(m.byTestId('data-status').textContent).toMatch(/broken\.jsonl was not imported \(nothing was written\).*line 2/s);
    expect((await m.page.data.data.trajectories(runId)).length).toBe(stored.length);
    // The same lines, well formed, are imported.
    await userEvent.upload(m.byTestId('import-jsonl'), new File([`${fresh.join('\n')}\n`], 'good.jsonl'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toContain('Imported good.jsonl: 0 tasks, 3 trajectories');
    expect((await m.page.data.data.trajectories(runId)).length).toBe(stored.length + 3);

    // The exported checkpoint, evaluated with the same settings as a new run: the same result.
    await userEvent.upload(m.byTestId('setup-checkpoint'), new File([await (checkpointFile?.data as Blob).arrayBuffer()], checkpointFile?.name as string));
    await expect.poll(() => evaluatedRows(m).length, { timeout: 50_000, interval: 100 }).toBe(2);
    const imported = m.page.store.state.value;
    expect(imported.runId).not.toBe(runId);
    expect(imported.record?.imported?.file).toBe(checkpointFile?.name);
    expect(imported.evaluation?.success).toEqual(original?.success);
    expect(imported.evaluation?.meanReward).toBe(original?.meanReward);
    expect(evaluatedRows(m).find((r) => r.dataset['runId'] === imported.runId)?.textContent).toContain('(checkpoint)');

    // Delete the first run after confirming; cancelling first keeps it.
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-run'), runId);
    await userEvent.click(m.byTestId('delete-run'));
    expect(m.byTestId('confirm').textContent).toContain(runId);
    await userEvent.click(m.byTestId('confirm-no'));
    expect(m.host.querySelector('[data-testid="confirm"]')).toBeNull();
    expect((await m.page.data.data.listRuns()).map((r) => r.id)).toContain(runId);
    await userEvent.click(m.byTestId('delete-run'));
    await userEvent.click(m.byTestId('confirm-yes'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toBe(`Deleted run ${runId}.`);
    expect((await m.page.data.data.listRuns()).map((r) => r.id)).toEqual([imported.runId]);
    expect(await m.page.data.data.trajectories(runId)).toEqual([]);
    expect(evaluatedRows(m).map((r) => r.dataset['runId'])).toEqual([imported.runId]);

    // Storage use is shown; clear all storage after confirming.
    await expect.poll(() => m.byTestId('storage-use').textContent, { timeout: 10_000 }).toMatch(/Storage used: \d+(\.\d)? (B|KB|MB|GB)/);
    await userEvent.click(m.byTestId('clear-storage'));
    await userEvent.click(m.byTestId('confirm-yes'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toBe('Cleared all stored runs.');
    expect(await m.page.data.data.listRuns()).toEqual([]);
    expect(evaluatedRows(m)).toHaveLength(0);
    expect(m.byTestId('train-status').dataset['state']).toBe('idle');
  });

  it('finds a corrupt record, removes it after confirmation, and the run reads again', async () => {
    const names = freshStorage();
    const m = mountPage(names);
    mounted.push(m);
    await m.page.ready;
    await userEvent.click(m.byTestId('check-storage'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toBe('No corrupt records found.');
    await setUpTinyRun(m.byTestId, 2);
    await userEvent.click(m.byTestId('train-start'));
    await expect.poll(() => m.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    const runId = m.page.store.state.value.runId as string;
    const before = await m.page.data.data.trajectories(runId);
    // As an edit in devtools would: one stored step loses its embedding.
    await editRecord(indexedDB, names.replay as string, 'transitions', [runId, 1], ({ embedding: _, ...rest }) => rest);

    await userEvent.click(m.byTestId('check-storage'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toMatch(/^Found \d+ corrupt record\(s\); nothing was changed\./);
    expect(m.byTestId('repair-findings').textContent).toContain(`transitions ["${runId}",1]`);
    // Cancel changes nothing.
    await userEvent.click(m.byTestId('repair-storage'));
    await userEvent.click(m.byTestId('confirm-no'));
    await userEvent.click(m.byTestId('check-storage'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toMatch(/^Found \d+ corrupt record/);

    await userEvent.click(m.byTestId('repair-storage'));
    expect(m.byTestId('confirm').textContent).toMatch(/Remove \d+ corrupt record/);
    await userEvent.click(m.byTestId('confirm-yes'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toMatch(/^Removed \d+ corrupt record\(s\)\./);
    await userEvent.click(m.byTestId('check-storage'));
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toMatch(/^No corrupt records found\./);
    // The trajectory the damaged step belonged to is gone; the others read as before.
    const after = await m.page.data.data.trajectories(runId);
    expect(after.length).toBe(before.length - 1);
  });

  it('asks for persistent storage and reports the answer', async () => {
    let asked = 0;
    let persisted = false;
    const storageManager = {
      estimate: async () => ({ usage: 2048, quota: 1024 * 1024 }),
      persisted: async () => persisted,
      persist: async () => {
        asked++;
        persisted = true;
        return true;
      },
    } as unknown as StorageManager;
    const host = document.createElement('div');
    document.body.appendChild(host);
    const { mountTrainingPage } = await import('../src/ui/TrainingPage.tsx');
    const page = mountTrainingPage(host, { storage: freshStorage(), storageManager });
    try {
      await page.ready;
      const byId = (id: string): HTMLElement => host.querySelector(`[data-testid="${id}"]`) as HTMLElement;
      await expect.poll(() => byId('storage-use').textContent).toContain('Storage used: 2.0 KB of 1.0 MB');
      expect(byId('storage-use').textContent).toContain('Not persistent');
      await userEvent.click(byId('persist-storage'));
      await expect.poll(() => byId('storage-use').textContent).toContain('Persistent: the browser keeps it');
      expect(asked).toBe(1);
      expect((byId('persist-storage') as HTMLButtonElement).disabled).toBe(true);
    } finally {
      page.destroy();
      host.remove();
    }
  });
});
