import { describe, expect, it } from 'vitest';
import { Rng } from '../src/core/rng.ts';
import type { Observation, RealEnvironment, StepResult, Task } from '../src/core/types.ts';
import { expertPolicy, noisyPolicy, parsePolicy, runEpisode } from '../src/envs/episode.ts';

/** A corridor: walk `right` `length` times to win; `left` is valid but wasteful; anything else is invalid. */
class Corridor implements RealEnvironment {
  readonly name = 'shop' as const;
  readonly maxSteps = 6;
  private pos = 0;
  private t = 0;
  constructor(private readonly length = 3) {}
  private obs(): Observation {
    return { text: `at ${this.pos}`, actions: ['left', 'right'] };
  }
  reset(_task: Task): Observation {
    this.pos = 0;
    this.t = 0;
    return this.obs();
  }
  step(action: string): StepResult {
    this.t++;
    const valid = action === 'left' || action === 'right';
    if (action === 'right') this.pos++;
    if (action === 'left') this.pos = Math.max(0, this.pos - 1);
    const won = this.pos >= this.length;
    const done = won || this.t >= this.maxSteps;
    return { observation: this.obs(), reward: won ? 1 : 0, done, info: { valid, success: won } };
  }
  expertAction(): string {
    return 'right';
  }
}

const task: Task = { id: 't1', env: 'shop', instruction: 'walk right', goal: null, split: 'train', origin: 'seed' };

describe('runEpisode', () => {
  it('records each step with the observation before the action', () => {
    const traj = runEpisode(new Corridor(), task, expertPolicy, { rng: new Rng(0) });
    expect(traj.steps.map((s) => s.observation.text)).toEqual(['at 0', 'at 1', 'at 2']);
    expect(traj.steps.map((s) => s.action)).toEqual(['right', 'right', 'right']);
    expect(traj.steps.map((s) => s.reward)).toEqual([0, 0, 1]);
    expect(traj.steps.at(-1)?.done).toBe(true);
    expect(traj).toMatchObject({ taskId: 't1', env: 'shop', source: 'offline', reward: 1, success: true });
  });

  it('stops at the step limit with failure', () => {
    const always = (): string => 'left';
    const traj = runEpisode(new Corridor(), task, always, { rng: new Rng(0), source: 'real', trajectoryId: 'x' });
    expect(traj.steps).toHaveLength(6);
    expect(traj).toMatchObject({ id: 'x', source: 'real', reward: 0, success: false });
  });

  it('noisy policy mixes random admissible actions, reproducibly', () => {
    const run = (seed: number) =>
      runEpisode(new Corridor(5), task, noisyPolicy(0.5), { rng: new Rng(seed) }).steps.map((s) => s.action);
    expect(run(1)).toEqual(run(1));
    const actions = Array.from({ length: 20 }, (_, i) => run(i)).flat();
    expect(actions).toContain('left');
    expect(actions).toContain('right');
    const zero = runEpisode(new Corridor(5), task, noisyPolicy(0), { rng: new Rng(2) });
    expect(zero.success).toBe(true);
  });

  it('parsePolicy accepts expert and noisy:EPS, rejects the rest loudly', () => {
    expect(parsePolicy('expert')).toBe(expertPolicy);
    expect(typeof parsePolicy('noisy:0.3')).toBe('function');
    expect(() => parsePolicy('noisy:1.5')).toThrow(/\[0, 1\], got 1.5/);
    expect(() => parsePolicy('greedy')).toThrow(/Unknown policy "greedy"/);
  });
});
