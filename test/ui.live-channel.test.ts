/** The live channel that shows a run another tab trains (src/ui/train/live-channel.ts). */
import { afterEach, describe, expect, it } from 'vitest';
import { liveChannelName, openLiveChannel, type LiveChannel } from '../src/ui/train/live-channel.ts';
import type { TrainingEvent } from '../workers/training.protocol.ts';

const opened: LiveChannel[] = [];
const open = (index: string): LiveChannel => {
  const channel = openLiveChannel({ index });
  opened.push(channel);
  return channel;
};
afterEach(() => {
  for (const channel of opened.splice(0)) channel.close();
});
const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('live channel', () => {
  it('is named after the run index, with the default index when none is given', () => {
    expect(liveChannelName({ index: 'x' })).toBe('dreamgym-training:x');
    expect(liveChannelName()).toBe('dreamgym-training:dreamgym-page-runs');
  });

  it('delivers one tab’s run events to the tabs of the same storage only, not the backend report', async () => {
    const trainer = open('runs-a');
    const watcher = open('runs-a');
    const stranger = open('runs-b');
    const heard: TrainingEvent[] = [];
    const strangerHeard: TrainingEvent[] = [];
    watcher.subscribe((e) => heard.push(e));
    stranger.subscribe((e) => strangerHeard.push(e));
    trainer.publish({ kind: 'backend', report: null });
    trainer.publish({ kind: 'iteration-start', runId: 'r', iteration: 0, totalIterations: 2, phase: 'synthetic' });
    await expect.poll(() => heard.length).toBe(1);
    await wait(50);
    expect(heard).toEqual([{ kind: 'iteration-start', runId: 'r', iteration: 0, totalIterations: 2, phase: 'synthetic' }]);
    expect(strangerHeard).toEqual([]);
  });

  it('ignores messages that are not protocol events, and stops after close or unsubscribe', async () => {
    const watcher = open('runs-c');
    const heard: TrainingEvent[] = [];
    const off = watcher.subscribe((e) => heard.push(e));
    const raw = new BroadcastChannel(liveChannelName({ index: 'runs-c' }));
    raw.postMessage('not an event');
    raw.postMessage({ nokind: 1 });
    raw.postMessage({ kind: 'seed', runId: 'r', done: 1, total: 2 });
    await expect.poll(() => heard.length).toBe(1);
    off();
    raw.postMessage({ kind: 'seed', runId: 'r', done: 2, total: 2 });
    await wait(50);
    raw.close();
    expect(heard).toEqual([{ kind: 'seed', runId: 'r', done: 1, total: 2 }]);
  });
});
