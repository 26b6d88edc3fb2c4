/**
 * The inspector in Chromium with the real training worker: after a tiny dreamgym run it lists the
 * replay buffer, filters it by source, task and outcome, opens a synthetic trajectory and shows
 * each step's state, action, reasoning and reward; the curriculum lists the tasks in lineage order;
 * and stored text (here an imported trajectory carrying markup) is shown as text, never as HTML.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import { taskLine, trajectoryLine } from '../src/core/jsonl.ts';
import type { Task, Trajectory } from '../src/core/types.ts';
import { mountPage, freshStorage, setUpTinyRun, unmountPage, type MountedPage } from './fixtures/training-page.ts';
import { getEnvSpec } from '../src/envs/registry.ts';

/** A goal that parses for shop (import validates goals of built-in environments). */
const shopGoal = (): Task['goal'] => (getEnvSpec('shop').tasks({ split: 'train', count: 1, seed: 1 })[0] as Task).goal;

const mounted: MountedPage[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) unmountPage(m);
});

const rows = (m: MountedPage): HTMLTableRowElement[] => [...m.byTestId('buffer-table').querySelectorAll<HTMLTableRowElement>('tbody tr[data-trajectory-id]')];
const cells = (row: HTMLTableRowElement): string[] => [...row.querySelectorAll('th, td')].map((c) => c.textContent ?? '');

describe('inspector (browser)', () => {
  it('reads the buffer and curriculum of a trained run, filtered, step by step, as text', async () => {
    const m = mountPage(freshStorage());
    mounted.push(m);
    await m.page.ready;
    expect(m.byTestId('inspect-panel').textContent).toContain('Start a run');
    // Groups of 4 over 6 iterations: enough reward variance for the curriculum to generate tasks.
    await setUpTinyRun(m.byTestId, 6, { groupSize: '4' });
    await userEvent.click(m.byTestId('train-start'));
    await expect.poll(() => m.byTestId('train-status').dataset['state'], { timeout: 50_000, interval: 100 }).toBe('done');
    // The panel reloads as the run ends; one more load settles what it lists.
    await m.page.data.refresh();
    const all = rows(m).length;
    expect(all).toBeGreaterThan(10);
    expect(new Set(rows(m).map((r) => r.dataset['source']))).toEqual(new Set(['offline', 'synthetic']));

    // Source filter.
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-source'), 'synthetic');
    await expect.poll(() => rows(m).every((r) => r.dataset['source'] === 'synthetic') && rows(m).length < all, { timeout: 10_000 }).toBe(true);
    const synthetic = rows(m);
    expect(synthetic.length).toBeGreaterThan(0);

    // Open a synthetic trajectory: every step has a state, an action, the model's reasoning and a reward.
    const first = synthetic[0] as HTMLTableRowElement;
    const [id, taskId, , stepCount] = cells(first);
    await userEvent.click(first.querySelector('button') as HTMLElement);
    await expect.poll(() => m.host.querySelector('[data-testid="trajectory-view"]') !== null, { timeout: 10_000 }).toBe(true);
    const view = m.byTestId('trajectory-view');
    expect(view.textContent).toContain(`Trajectory ${id} (synthetic, task ${taskId})`);
    const steps = [...view.querySelectorAll('[data-testid="trajectory-step"]')];
    expect(steps).toHaveLength(Number(stepCount));
    for (const step of steps) {
      expect(step.querySelector('[data-field="state"]')?.textContent?.length).toBeGreaterThan(0);
      expect(step.querySelector('[data-field="action"]')?.textContent?.length).toBeGreaterThan(0);
      expect(step.querySelector('[data-field="reasoning"]')?.textContent?.length).toBeGreaterThan(0);
      expect(step.textContent).toMatch(/reward \d+\.\d\d/);
    }

    // Task and outcome filters.
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-source'), '');
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-task'), taskId as string);
    await expect.poll(() => rows(m).length > 0 && rows(m).every((r) => cells(r)[1] === taskId), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-task'), '');
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-outcome'), 'success');
    await expect.poll(() => rows(m).length > 0 && rows(m).length < all && rows(m).every((r) => cells(r)[5] === 'success'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-outcome'), 'failure');
    await expect.poll(() => rows(m).length > 0 && rows(m).every((r) => cells(r)[5] === 'failure'), { timeout: 10_000 }).toBe(true);
    await userEvent.selectOptions(m.byTestId<HTMLSelectElement>('inspect-outcome'), '');

    // Curriculum: every task once; a generated task right below its lineage, one level deeper.
    const taskRows = [...m.byTestId('curriculum-table').querySelectorAll<HTMLTableRowElement>('tbody tr[data-task-id]')];
    expect(taskRows.length).toBeGreaterThan(0);
    const ids = taskRows.map((r) => r.dataset['taskId']);
    expect(new Set(ids).size).toBe(ids.length);
    taskRows.forEach((r, i) => {
      const parent = r.dataset['parentId'];
      if (!parent || !ids.includes(parent)) return;
      const at = ids.indexOf(parent);
      expect(at).toBeLessThan(i);
      expect(Number(r.dataset['depth'])).toBe(Number(taskRows[at]?.dataset['depth']) + 1);
    });

    // Stored text with markup is shown as text: import a generated task and a trajectory whose
    // instruction, state and reasoning hold HTML; the task shows under its parent in the curriculum.
    const parent = taskRows[0]?.dataset['taskId'] as string;
    const parentTask = (await m.page.data.data.curriculum(m.page.store.state.value.runId as string)).find((t) => t.id === parent);
    const hostile = '<img src="x" data-injected="1"><b>bold</b>';
    const trajectory: Trajectory = {
      id: 'imported-markup',
      taskId: 'generated-markup',
      env: 'shop',
      source: 'offline',
      steps: [{ observation: { text: hostile, actions: ['click[<script>x</script>]'] }, action: 'click[<script>x</script>]', reward: 0, done: true, valid: true, reasoning: hostile }],
      reward: 0,
      success: false,
    };
    const generatedTask: Task = { id: 'generated-markup', env: 'shop', instruction: hostile, goal: shopGoal(), split: 'train', origin: 'generated', parentId: parent, generation: (parentTask?.generation ?? 0) + 1 };
    const file = new File([`${taskLine(generatedTask)}\n${trajectoryLine(trajectory)}\n`], 'markup.jsonl', { type: 'application/x-ndjson' });
    await userEvent.upload(m.byTestId('import-jsonl'), file);
    await expect.poll(() => m.byTestId('data-status').textContent, { timeout: 10_000 }).toContain('Imported markup.jsonl');
    await expect.poll(() => rows(m).some((r) => r.dataset['trajectoryId'] === 'imported-markup'), { timeout: 10_000 }).toBe(true);
    await userEvent.click(rows(m).find((r) => r.dataset['trajectoryId'] === 'imported-markup')?.querySelector('button') as HTMLElement);
    await expect.poll(() => m.host.querySelector('[data-testid="trajectory-view"]')?.textContent ?? '', { timeout: 10_000 }).toContain('imported-markup');
    const markupView = m.byTestId('trajectory-view');
    expect(markupView.querySelector('[data-field="state"]')?.textContent).toBe(hostile);
    expect(markupView.querySelector('[data-field="reasoning"]')?.textContent).toBe(hostile);
    expect(markupView.querySelector('[data-field="action"]')?.textContent).toBe('click[<script>x</script>]');
    expect(m.host.querySelector('[data-injected], b, script')).toBeNull();
    const curriculum = [...m.byTestId('curriculum-table').querySelectorAll<HTMLTableRowElement>('tbody tr[data-task-id]')];
    const at = curriculum.findIndex((r) => r.dataset['taskId'] === 'generated-markup');
    const parentAt = curriculum.findIndex((r) => r.dataset['taskId'] === parent);
    expect(at).toBeGreaterThan(parentAt);
    expect(curriculum.slice(parentAt + 1, at).every((r) => Number(r.dataset['depth']) > Number(curriculum[parentAt]?.dataset['depth']))).toBe(true);
    expect(curriculum[at]?.dataset['depth']).toBe(String(Number(curriculum[parentAt]?.dataset['depth']) + 1));
    expect(curriculum[at]?.querySelector('.task-instruction')?.textContent).toBe(hostile);
    expect(cells(curriculum[at] as HTMLTableRowElement).slice(1, 4)).toEqual(['generated', String((parentTask?.generation ?? 0) + 1), '1']);
  });
});
