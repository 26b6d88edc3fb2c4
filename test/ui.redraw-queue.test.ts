/**
 * The chart redraw queue: one redraw per task, the newest per chart, only while its chart is on
 * screen (src/ui/charts/redraw-queue.ts).
 */
import { describe, expect, it } from 'vitest';
import { RedrawQueue } from '../src/ui/charts/redraw-queue.ts';

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
async function settle(queue: RedrawQueue): Promise<void> {
  for (let i = 0; i < 50 && queue.size > 0; i++) await tick();
  await tick();
}

describe('RedrawQueue', () => {
  it('runs each waiting redraw in a task of its own, not all in the task that scheduled them', async () => {
    const queue = new RedrawQueue();
    const ran: string[] = [];
    const charts = [{}, {}, {}];
    charts.forEach((chart, i) => queue.schedule(chart, () => ran.push(`c${i}`)));
    // Nothing runs in the scheduling task.
    expect(ran).toEqual([]);
    await tick();
    await tick();
    // One task later at most one more has run: they are spread over tasks.
    expect(ran.length).toBeLessThan(3);
    await settle(queue);
    expect(ran).toEqual(['c0', 'c1', 'c2']);
  });

  it('keeps only the newest redraw of a chart', async () => {
    const queue = new RedrawQueue();
    const chart = {};
    const ran: number[] = [];
    for (let i = 0; i < 5; i++) queue.schedule(chart, () => ran.push(i));
    await settle(queue);
    expect(ran).toEqual([4]);
  });

  it('holds a hidden chart back until it is visible and woken; a cancelled one never runs', async () => {
    const queue = new RedrawQueue();
    let visible = false;
    const ran: string[] = [];
    queue.schedule({}, () => ran.push('hidden'), () => visible);
    const gone = {};
    queue.schedule(gone, () => ran.push('gone'), () => visible);
    queue.cancel(gone);
    await settle(queue);
    expect(ran).toEqual([]);
    expect(queue.size).toBe(1);
    visible = true;
    queue.wake();
    await settle(queue);
    expect(ran).toEqual(['hidden']);
    expect(queue.size).toBe(0);
  });

  it('a redraw that throws does not stop the others', async () => {
    const queue = new RedrawQueue();
    const ran: string[] = [];
    const error = console.error;
    console.error = () => {};
    try {
      queue.schedule({}, () => {
        throw new Error('broken chart');
      });
      queue.schedule({}, () => ran.push('ok'));
      await settle(queue);
    } finally {
      console.error = error;
    }
    expect(ran).toEqual(['ok']);
  });
});
