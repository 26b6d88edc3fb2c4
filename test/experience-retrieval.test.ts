import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMONSTRATOR, generateOfflineData } from '../src/envs/offline.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { EPISODE_OVER_TEXT, RetrievalDataError, RetrievalExperienceModel, transitionsFromTrajectories, withoutStaleActions, type RetrievalModelConfig } from '../src/experience/retrieval/model.ts';
import { measureFidelity } from '../src/train/fidelity.ts';
import { HashedEmbedder } from '../src/policy/hashed-embedder.ts';
import { RecombinationTaskGenerator } from '../src/curriculum/generator.ts';
import { Rng } from '../src/core/rng.ts';
import { noisyPolicy, runEpisode } from '../src/envs/episode.ts';
import { agentView, type JsonValue, type Observation, type Task, type Trajectory } from '../src/core/types.ts';
import type { HistoryStep } from '../src/experience/types.ts';
import { importGraph, importSpecifiers } from './fixtures/import-graph.ts';
import { referencePolicy } from '../src/train/reference.ts';
import { groupAdvantages } from '../src/rl/grpo.ts';
import { DOCS, MAX_STEPS, ShortcutWorld, shortcutEpisode, shortcutTasks } from './fixtures/shortcut-domain.ts';

const data = [...generateOfflineData(getEnvSpec('shop'), { episodes: 60, seed: 4, policy: 'noisy:0.3', split: 'train' })];
const tasks = data.map((d) => d.task);
const trajectories = data.map((d) => d.trajectory);
let model: RetrievalExperienceModel;
/**
 * The predictor alone, without its grounding: these tests judge what it shows where the data
 * covers a step less well than a recorded fact; grounded, most such steps halt as unknown (see the
 * grounding tests below).
 */
const PREDICTOR = { grounding: false } as const;
/** What the shop declares of its search box, as the callers of the model pass it on. */
const SHOP_FREE_TEXT = getEnvSpec('shop').freeTextActions ?? [];
let tensorsBefore = 0;

beforeAll(async () => {
  tensorsBefore = tf.memory().numTensors;
  model = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, freeTextActions: SHOP_FREE_TEXT, rewardModel: { epochs: 10 } });
});
afterAll(() => {
  model.dispose();
  expect(tf.memory().numTensors).toBe(tensorsBefore);
});

/** Plays `plan` inside `sim` from `start` while each action is offered; whether it ends in a success. */
async function playsToSuccess(sim: RetrievalExperienceModel, task: Task, start: Observation, plan: readonly string[]): Promise<boolean> {
  const history: HistoryStep[] = [];
  let observation = start;
  for (const action of plan) {
    if (!observation.actions.includes(action)) return false;
    const step = await sim.step({ task, history: history.slice(), observation, action, demos: [] });
    history.push({ observation, action });
    if (step.done) return step.reward >= 0.999;
    observation = step.observation;
  }
  return false;
}

describe('withoutStaleActions', () => {
  it('drops actions on a place the state offers to go to, and leaves every real state as it is', () => {
    const state = { text: 'x', actions: ['go to desk 1', 'go to shelf 1', 'go to bed 1', 'take pen 1 from desk 1', 'examine shelf 1', 'put mug 1 in/on sofa 1', 'examine mug 1', 'look'] };
    expect(withoutStaleActions(state).actions).toEqual(['go to desk 1', 'go to shelf 1', 'go to bed 1', 'put mug 1 in/on sofa 1', 'examine mug 1', 'look']);
    // Fewer than three places to go to: no move is plain enough to judge by.
    const small = { text: 'x', actions: ['go to desk 1', 'take pen 1 from desk 1'] };
    expect(withoutStaleActions(small)).toBe(small);
    for (const env of ['shop', 'household'] as const) {
      for (const d of generateOfflineData(getEnvSpec(env), { episodes: 40, seed: 9, policy: 'noisy:0.5', split: 'train' })) {
        for (const step of d.trajectory.steps) expect(withoutStaleActions(step.observation)).toBe(step.observation);
      }
    }
  });
});

describe('RetrievalExperienceModel', () => {
  it('pays the partial reward the reward model expects for a purchase short of a success', async () => {
    // Held-out purchases that earned part of the reward for real: scored 0 before, so a policy
    // learning from scratch inside the simulator had nothing to climb.
    const held = [...generateOfflineData(getEnvSpec('shop'), { episodes: 60, seed: 8, policy: 'noisy:0.5', split: 'test' })];
    let partial = 0;
    let paid = 0;
    for (const { task, trajectory } of held) {
      const last = trajectory.steps.length - 1;
      const s = trajectory.steps[last]!;
      if (!s.action.includes('buy now') || trajectory.reward >= 1 || trajectory.reward <= 0) continue;
      const step = await model.step({ task, history: trajectory.steps.slice(0, last).map((x) => ({ observation: x.observation, action: x.action })), observation: s.observation, action: s.action, demos: [] });
      partial++;
      expect(step.done).toBe(true);
      expect(step.reward).toBeLessThan(1);
      if (step.reward > 0) paid++;
    }
    expect(partial).toBeGreaterThanOrEqual(5);
    expect(paid).toBeGreaterThanOrEqual(partial - 1);
  });

  it('replays a stored transition exactly for the same state and action', async () => {
    const traj = trajectories.find((t) => t.steps.length >= 3);
    if (!traj) throw new Error('fixture has no long trajectory');
    const task = tasks.find((t) => t.id === traj.taskId) as (typeof tasks)[number];
    const [s0, s1] = traj.steps;
    const step = await model.step({ task, history: [], observation: s0!.observation, action: s0!.action, demos: [] });
    expect(step.valid).toBe(true);
    expect(step.done).toBe(false);
    expect(step.reward).toBe(0);
    expect(step.observation).toEqual(s1!.observation);
    expect(step.reasoning).toMatch(/same state and action/);
  });

  it('a click on a listed product the data never opened shows that product\'s own title and price, not the neighbour\'s', async () => {
    // Before, the page came from the nearest stored click (usually the expert opening the target
    // product from the same results page) with only the id rewritten, so a random click showed the
    // product asked for and buying it "succeeded".
    const opened = new Set(trajectories.flatMap((t) => t.steps.map((s) => s.action)));
    let checked = 0;
    for (const traj of trajectories) {
      const task = tasks.find((t) => t.id === traj.taskId) as Task;
      for (const [i, s] of traj.steps.entries()) {
        const unseen = s.observation.actions.find((a) => /^click\[B0/.test(a) && !opened.has(a));
        if (!unseen || checked >= 5) continue;
        const id = unseen.slice(6, -1);
        const listing = s.observation.text.split('\n').find((l) => l.startsWith(`[${id}] `)) as string;
        const [title, price] = listing.slice(id.length + 3).split(' | ') as [string, string];
        const history = traj.steps.slice(0, i).map((h) => ({ observation: h.observation, action: h.action }));
        const step = await model.step({ task, history, observation: s.observation, action: unseen, demos: [] });
        expect(step.observation.text.split('\n')).toEqual(expect.arrayContaining([`Page: item ${id}`, title, `Price: ${price}`]));
        checked++;
      }
    }
    expect(checked).toBe(5);
  });

  it('buying what the last search result led to is not a success where real successes opened items near the top', async () => {
    // A successful expert episode replayed with the last result opened instead, the same choices,
    // then buy. Before the rank evidence the simulator called most of these successes (a policy
    // trained in it learned to buy the last result: 60% success inside, 4% in the real shop).
    // The data mixes expert episodes with random ones, as the loop's seed data does.
    const spec = getEnvSpec('shop');
    const mixed = [
      ...generateOfflineData(spec, { episodes: 60, seed: 11, policy: 'expert', split: 'train' }),
      ...generateOfflineData(spec, { episodes: 60, seed: 12, policy: 'noisy:1', split: 'train' }),
    ];
    const mixedTasks = mixed.map((d) => d.task);
    const shop = await RetrievalExperienceModel.fromTrajectories(mixedTasks, mixed.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    let replays = 0;
    let successes = 0;
    let originals = 0;
    try {
      for (const { task, trajectory: traj } of mixed.slice(0, 60)) {
        const open = traj.steps.findIndex((s) => /^click\[B0/.test(s.action));
        const results = traj.steps[open]?.observation;
        const items = results?.actions.filter((a) => /^click\[B0/.test(a)) ?? [];
        if (!traj.success || !results || items.length < 8 || traj.steps[open]?.action === items.at(-1)) continue;
        const run = async (opened: string): Promise<boolean> => {
          const history: HistoryStep[] = traj.steps.slice(0, open).map((h) => ({ observation: h.observation, action: h.action }));
          let observation: Observation = results;
          for (const action of [opened, ...traj.steps.slice(open + 1).map((s) => s.action)]) {
            const step = await shop.step({ task, history: history.slice(), observation, action, demos: [] });
            history.push({ observation, action });
            if (step.done) return step.reward >= 0.999;
            observation = step.observation;
          }
          return false;
        };
        replays++;
        if (await run(items.at(-1) as string)) successes++;
        if (await run(traj.steps[open]?.action as string)) originals++;
        if (replays >= 12) break;
      }
    } finally {
      shop.dispose();
    }
    expect(replays).toBe(12);
    // The recorded episodes themselves still succeed inside the simulator...
    expect(originals).toBeGreaterThanOrEqual(9);
    // ...while buying the last result rarely does.
    expect(successes).toBeLessThanOrEqual(3);
  });

  it('household: a walk does not bring the object the recorded walk carried, and a task word every success showed must show', async () => {
    const spec = getEnvSpec('household');
    const mixed = [
      ...generateOfflineData(spec, { episodes: 60, seed: 21, policy: 'expert', split: 'train' }),
      ...generateOfflineData(spec, { episodes: 40, seed: 22, policy: 'noisy:1', split: 'train' }),
    ];
    const hh = await RetrievalExperienceModel.fromTrajectories(mixed.map((d) => d.task), mixed.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    let walks = 0;
    let carriedShown = 0;
    let skips = 0;
    let skipSuccesses = 0;
    try {
      for (const { task, trajectory: traj } of mixed.slice(0, 60)) {
        if (!traj.success) continue;
        const take = traj.steps.findIndex((s) => s.action.startsWith('take '));
        const object = take >= 0 ? (traj.steps[take]?.action.split(' from ')[0] ?? '').slice(5) : '';
        const start = traj.steps[0]?.observation as Observation;
        // 1. From the first state, walk straight to where the expert later carried the object.
        const carriedWalk = traj.steps.slice(take + 1).find((s) => s.action.startsWith('go to ') && start.actions.includes(s.action));
        if (object && carriedWalk) {
          const step = await hh.step({ task, history: [], observation: start, action: carriedWalk.action, demos: [] });
          walks++;
          if (step.observation.actions.some((a) => a.includes(`${object} `) || a.endsWith(object))) carriedShown++;
        }
        // 2. Heat/cool/clean tasks: take the object and put it straight where it goes, skipping
        // the step that makes it hot, cool or clean.
        const change = traj.steps.findIndex((s) => /^(heat|cool|clean) /.test(s.action));
        const put = traj.steps.findIndex((s) => s.action.startsWith('put '));
        if (change < 0 || put < 0 || take < 0 || take > change) continue;
        const plan = [...traj.steps.slice(0, take + 1).map((s) => s.action), ...traj.steps.slice(change + 1, put + 1).map((s) => s.action)];
        skips++;
        if (await playsToSuccess(hh, task, start, plan)) skipSuccesses++;
      }
    } finally {
      hh.dispose();
    }
    expect(walks).toBeGreaterThanOrEqual(10);
    expect(carriedShown).toBe(0);
    expect(skips).toBeGreaterThanOrEqual(10);
    expect(skipSuccesses).toBe(0);
  });

  it('household, a small noisy log: a success needs the kind of action every recorded success of its instruction\'s word took', async () => {
    // 50 episodes of the goal-blind demonstrator at half noise (a user's log): too few successes
    // per task word for "a word every success showed", and "hot" is never shown (its step is "heat").
    const spec = getEnvSpec('household');
    const log = [...generateOfflineData(spec, { episodes: 50, seed: 5, policy: `${DEMONSTRATOR}:0.5`, split: 'train' })];
    /** Successes inside `sim` of the log's successful heat/cool/clean episodes replayed without those steps. */
    const skippedSuccesses = async (sim: RetrievalExperienceModel): Promise<{ skips: number; successes: number }> => {
      let skips = 0;
      let successes = 0;
      for (const { task, trajectory: traj } of log) {
        if (!traj.success) continue;
        const changes = (a: string): boolean => /^(heat|cool|clean) /.test(a);
        if (!traj.steps.some((s) => changes(s.action))) continue;
        const plan = traj.steps.map((s) => s.action).filter((a) => !changes(a));
        skips++;
        if (await playsToSuccess(sim, task, traj.steps[0]?.observation as Observation, plan)) successes++;
      }
      return { skips, successes };
    };
    const build = (requiredKinds: boolean): Promise<RetrievalExperienceModel> =>
      RetrievalExperienceModel.fromTrajectories(log.map((d) => d.task), log.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, requiredKinds });
    const withRule = await build(true);
    const without = await build(false);
    try {
      const on = await skippedSuccesses(withRule);
      const off = await skippedSuccesses(without);
      expect(on.skips).toBeGreaterThanOrEqual(8);
      expect(on.successes).toBe(0);
      // Without the rule the simulator paid the skipped step as a success.
      expect(off.successes).toBeGreaterThanOrEqual(Math.ceil(0.25 * off.skips));
    } finally {
      withRule.dispose();
      without.dispose();
    }
  });

  it('household: an action that ended episodes only by completing them does not end one it does not complete', async () => {
    // "put two X in Y": the first put (with no second X in Y yet) goes on in the real environment.
    // The simulator ended 7 of 7 such episodes there: called a success by the reward model, or,
    // read as "put ends episodes", a failure.
    const spec = getEnvSpec('household');
    const mixed = [
      ...generateOfflineData(spec, { episodes: 90, seed: 21, policy: 'expert', split: 'train' }),
      ...generateOfflineData(spec, { episodes: 40, seed: 22, policy: 'noisy:1', split: 'train' }),
    ];
    const hh = await RetrievalExperienceModel.fromTrajectories(mixed.map((d) => d.task), mixed.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    let firstPuts = 0;
    let ended = 0;
    try {
      for (const { task, trajectory: traj } of mixed) {
        if (!traj.success || !task.instruction.startsWith('put two ')) continue;
        const at = traj.steps.findIndex((s) => s.action.startsWith('put '));
        if (at < 0 || at === traj.steps.length - 1) continue;
        const step = await hh.step({ task, history: traj.steps.slice(0, at).map((s) => ({ observation: s.observation, action: s.action })), observation: traj.steps[at]!.observation, action: traj.steps[at]!.action, demos: [] });
        firstPuts++;
        if (step.done) ended++;
      }
    } finally {
      hh.dispose();
    }
    expect(firstPuts).toBeGreaterThanOrEqual(5);
    expect(ended).toBe(0);
  });

  it('household: putting a thing back where it was taken empties the hand, also where the data only saw such puts complete tasks', async () => {
    // After every held-out take, the put back there (the real environment always offers it). Where
    // the place is of the kind the instruction names ("take egg 1 from countertop 1" for "put a
    // cool egg in countertop"), every recorded put like it completed a task, so the nearest
    // neighbours had no next state and the state stayed: the egg still in hand, "You pick up the
    // egg 1 ..." again, a free step for a policy inside the simulator that costs it the egg for real.
    const spec = getEnvSpec('household');
    const train = [
      ...generateOfflineData(spec, { episodes: 200, seed: 41, policy: 'expert', split: 'train' }),
      ...generateOfflineData(spec, { episodes: 20, seed: 42, policy: 'noisy:0.3', split: 'train' }),
    ];
    const held = [...generateOfflineData(spec, { episodes: 60, seed: 43, policy: 'expert', split: 'test' })];
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    let putsBack = 0;
    let named = 0;
    const stillHeld: string[] = [];
    const wrongPickUps: string[] = [];
    try {
      for (const { task, trajectory } of held) {
        const steps = trajectory.steps;
        for (let i = 0; i + 1 < steps.length; i++) {
          const take = /^take (.+) from (.+)$/.exec(steps[i]!.action);
          if (!take) continue;
          const after = steps[i + 1]!.observation;
          const back = `put ${take[1]} in/on ${take[2]}`;
          if (!after.actions.includes(back)) continue;
          const history = steps.slice(0, i + 1).map((s) => ({ observation: s.observation, action: s.action }));
          const next = await hh.step({ task, history, observation: after, action: back, demos: [] });
          putsBack++;
          if (task.instruction.includes(` ${take[2]!.replace(/ \d+$/, '')}.`)) named++;
          if (next.done || !/Holding: nothing\./.test(next.observation.text)) stillHeld.push(`${task.instruction} ${back}`);
          // And the place offers exactly what the real one does to pick up (the thing put back among it).
          const pickUps = (o: Observation): string[] => o.actions.filter((a) => a.startsWith('take ')).sort();
          const real = spec.create();
          real.reset(task);
          for (const s of steps.slice(0, i + 1)) real.step(s.action);
          if (pickUps(next.observation).join() !== pickUps(real.step(back).observation).join()) wrongPickUps.push(`${task.instruction} ${back}`);
        }
      }
    } finally {
      hh.dispose();
    }
    expect(putsBack).toBeGreaterThanOrEqual(40);
    expect(named).toBeGreaterThanOrEqual(5);
    expect(stillHeld).toEqual([]);
    expect(wrongPickUps.length / putsBack).toBeLessThanOrEqual(0.05);
  });

  it('household: a walk keeps what the agent holds, and the place it reaches shows its own contents', async () => {
    // Walks of held-out noisy episodes from each of their states. Before, a neighbour whose text
    // had a line this state lacked was copied whole ("Holding: nothing." while holding a plate),
    // and an entity aligned with the wrong role was edited into the "Holding" sentence.
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 31, policy: 'noisy:0.3', split: 'train' })];
    const held = [...generateOfflineData(spec, { episodes: 20, seed: 32, policy: 'noisy:0.6', split: 'test' })];
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    const holding = (o: Observation): string => /Holding: ([^.]*)\./.exec(o.text)?.[1] ?? '?';
    let walks = 0;
    let kept = 0;
    try {
      for (const { task, trajectory } of held) {
        const history: HistoryStep[] = [];
        for (const step of trajectory.steps) {
          if (step.action.startsWith('go to ')) {
            const next = await hh.step({ task, history: history.slice(), observation: step.observation, action: step.action, demos: [] });
            walks++;
            if (holding(next.observation) === holding(step.observation)) kept++;
          }
          history.push({ observation: step.observation, action: step.action });
        }
      }
    } finally {
      hh.dispose();
    }
    expect(walks).toBeGreaterThan(100);
    expect(kept).toBe(walks);
  });

  it('household: each place rule adds next-state matches on held-out episodes, and switching it off loses them', async () => {
    // The ablation switches of the rules learned from moves (./arrival.ts and what builds on it):
    // each is worth something here, and a model without it is a broken variant the figure catches.
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 41, policy: 'noisy:0.3', split: 'train' })];
    const held = [...generateOfflineData(spec, { episodes: 20, seed: 42, policy: 'noisy:0.3', split: 'test' })];
    const matched = async (switches: Partial<RetrievalModelConfig>): Promise<number> => {
      const m = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, ...switches });
      try {
        return (await measureFidelity(m, held)).nextStateMatch;
      } finally {
        m.dispose();
      }
    };
    const all = await matched({});
    for (const off of [{ placeRules: false }, { arrivalTexts: false }, { placeContents: false }]) {
      expect(await matched(off), JSON.stringify(off)).toBeLessThan(all);
    }
  });

  it("household: `look` lists this episode's room, as its first state did, not the recorded episode's", async () => {
    // Before, `look` reused a neighbour's next state, rewritten: the places of another room
    // (about 7% of held-out `look` steps showed the real text).
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 31, policy: 'noisy:0.3', split: 'train' })];
    const held = [...generateOfflineData(spec, { episodes: 20, seed: 33, policy: 'noisy:0.6', split: 'test' })];
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    const room = (o: Observation): string | undefined => /Looking quickly around you, [^\n]*/.exec(o.text)?.[0];
    let looks = 0;
    let same = 0;
    try {
      for (const { task, trajectory } of held) {
        const first = room(trajectory.steps[0]?.observation as Observation);
        const history: HistoryStep[] = [];
        for (const step of trajectory.steps) {
          // From a place (not the start), so that nothing of the first state is on screen.
          if (history.length > 0 && room(step.observation) === undefined && step.observation.actions.includes('look')) {
            const next = await hh.step({ task: agentView(task), history: history.slice(), observation: step.observation, action: 'look', demos: [] });
            looks++;
            if (first !== undefined && room(next.observation) === first) same++;
          }
          history.push({ observation: step.observation, action: step.action });
        }
      }
    } finally {
      hh.dispose();
    }
    expect(looks).toBeGreaterThan(100);
    // All but one: a `look` right after `inventory` at the start, whose neighbour looked from its
    // own start (its state and next state the same), changes nothing.
    expect(same / looks).toBeGreaterThan(0.99);
  });

  it('no simulated line starts or ends with a space or holds two in a row, in either environment', async () => {
    // A word edit that deleted a sentence ("You arrive at cabinet 2. The cabinet 2 is closed." ->
    // "The cabinet 2 is closed.") left the space after it: 63 of every 100 household `examine`
    // steps differed from the real text by that alone (match 21.9% -> 84.9% without it).
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 31, policy: 'noisy:0.3', split: 'train' })];
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    const cases = [
      { sim: hh, held: [...generateOfflineData(spec, { episodes: 20, seed: 33, policy: 'noisy:0.6', split: 'test' })] },
      { sim: model, held: [...generateOfflineData(getEnvSpec('shop'), { episodes: 20, seed: 34, policy: 'noisy:0.6', split: 'test' })] },
    ];
    const stray: string[] = [];
    let steps = 0;
    try {
      for (const { sim, held } of cases) {
        for (const { task, trajectory } of held) {
          const history: HistoryStep[] = [];
          for (const step of trajectory.steps) {
            const next = await sim.step({ task: agentView(task), history: history.slice(), observation: step.observation, action: step.action, demos: [] });
            steps++;
            for (const line of next.observation.text.split('\n')) if (line !== line.trim() || line.includes('  ')) stray.push(`${step.action}: ${JSON.stringify(line)}`);
            history.push({ observation: step.observation, action: step.action });
          }
        }
      }
    } finally {
      hh.dispose();
    }
    expect(steps).toBeGreaterThan(500);
    expect(stray.slice(0, 5)).toEqual([]);
  });

  it('household: going on from a place the data never left gives that place back to "go to" and takes its own actions away', async () => {
    // The task's only recorded "go to B" started in the middle of the room; here the agent stands
    // at A. Before, "go to A" stayed missing and A's "open"/"examine" stayed offered at B.
    const spec = getEnvSpec('household');
    const task = spec.tasks({ split: 'train', count: 1, seed: 21 })[0] as Task;
    const env = spec.create();
    const start = env.reset(task);
    const places = start.actions.filter((a) => a.startsWith('go to ')).map((a) => a.slice(6));
    const [a, b] = places as [string, string];
    const recorded = [{ observation: start, action: `go to ${b}`, reward: 0, done: false, valid: true }];
    const atB = env.step(`go to ${b}`).observation;
    recorded.push({ observation: atB, action: 'look', reward: 0, done: false, valid: true });
    const hh = await RetrievalExperienceModel.fromTrajectories([task], [{ id: 'r', taskId: task.id, env: 'household', source: 'offline', steps: recorded, success: false, reward: 0 }], new HashedEmbedder({ dim: 64 }), { ...PREDICTOR, useRewardModel: false });
    try {
      env.reset(task);
      const atA = env.step(`go to ${a}`).observation;
      const realB = env.step(`go to ${b}`).observation;
      const step = await hh.step({ task, history: [{ observation: start, action: `go to ${a}` }], observation: atA, action: `go to ${b}`, demos: [] });
      expect(step.observation.actions).toContain(`go to ${a}`);
      expect(step.observation.actions.filter((x) => x !== `go to ${a}` && x.includes(a))).toEqual([]);
      expect(new Set(step.observation.actions)).toEqual(new Set(realB.actions));
    } finally {
      hh.dispose();
    }
  });

  it('going back twice goes back two pages, not to the page just left', async () => {
    // Each recorded episode goes search -> list -> item, back to the list, back to the search page.
    const pages = (i: number) => ({
      search: { text: `Search page ${i}: type a query.`, actions: ['search', 'help'] },
      list: { text: `Results ${i}: item ${i}a, item ${i}b.`, actions: ['open', 'back'] },
      item: { text: `Item ${i}a: price ${10 + i}.`, actions: ['buy', 'back'] },
    });
    const tasks: Task[] = Array.from({ length: 8 }, (_, i) => ({ id: `p${i}`, env: 'pages', instruction: `find item ${i}a`, goal: null, split: 'train', origin: 'seed' }));
    const trajectories: Trajectory[] = tasks.map((task, i) => {
      const p = pages(i);
      const walk: [Observation, string][] = [[p.search, 'search'], [p.list, 'open'], [p.item, 'back'], [p.list, 'back'], [p.search, 'help']];
      return { id: `r${i}`, taskId: task.id, env: 'pages', source: 'offline', steps: walk.map(([observation, action], k) => ({ observation, action, reward: 0, done: k === walk.length - 1, valid: true })), success: false, reward: 0 };
    });
    const sim = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 64 }), { ...PREDICTOR, useRewardModel: false });
    try {
      const p = pages(42);
      const task: Task = { id: 'p42', env: 'pages', instruction: 'find item 42a', goal: null, split: 'train', origin: 'seed' };
      const history = [
        { observation: p.search, action: 'search' },
        { observation: p.list, action: 'open' },
        { observation: p.item, action: 'back' },
      ];
      const step = await sim.step({ task, history, observation: p.list, action: 'back', demos: [] });
      expect(step.observation).toEqual(p.search);
      // One page back from the item is the list.
      const once = await sim.step({ task, history: history.slice(0, 2), observation: p.item, action: 'back', demos: [] });
      expect(once.observation).toEqual(p.list);
    } finally {
      sim.dispose();
    }
  });

  it("a form reached from an item's page names that item, not the neighbour's", async () => {
    // Each recorded episode opens one fare and selects it; the form quotes the fare's fields.
    const fares = [['F-11', 'Oslo', '230'], ['F-12', 'Rome', '310'], ['F-13', 'Lima', '99'], ['F-14', 'Nice', '145'], ['F-15', 'Bern', '480']] as const;
    const farePage = (id: string, city: string, price: string): Observation => ({ text: `Fare ${id}: to ${city}, ${price} EUR.`, actions: ['select this fare', 'back'] });
    const task = (i: number): Task => ({ id: `fare-${i}`, env: 'fares', instruction: `book a fare to ${fares[i]![1]}`, goal: null, split: 'train', origin: 'seed' });
    const recorded = fares.map(([id, city, price], i): Trajectory => ({
      id: `r${i}`,
      taskId: `fare-${i}`,
      env: 'fares',
      source: 'offline',
      steps: [
        { observation: farePage(id, city, price), action: 'select this fare', reward: 0, done: false, valid: true },
        { observation: { text: `Booking form for fare ${id} (${city}, ${price} EUR).`, actions: ['confirm'] }, action: 'confirm', reward: 1, done: true, valid: true },
      ],
      success: true,
      reward: 1,
    }));
    const sim = await RetrievalExperienceModel.fromTrajectories(fares.map((_, i) => task(i)), recorded, new HashedEmbedder({ dim: 64 }), { ...PREDICTOR, useRewardModel: false });
    try {
      const ours: Task = { id: 'fare-new', env: 'fares', instruction: 'book a fare to Cork', goal: null, split: 'train', origin: 'seed' };
      const step = await sim.step({ task: ours, history: [], observation: farePage('F-77', 'Cork', '612'), action: 'select this fare', demos: [] });
      expect(step.observation.text).toBe('Booking form for fare F-77 (Cork, 612 EUR).');
    } finally {
      sim.dispose();
    }
  });

  it('free text: accepted where the environment declares it or its data shows it taken, refused otherwise', async () => {
    const spec = getEnvSpec('shop');
    const task = spec.tasks({ split: 'train', count: 1, seed: 21 })[0] as Task;
    const env = spec.create();
    const start = env.reset(task);
    const free = 'search[something nobody suggested]';
    expect(start.actions).not.toContain(free);
    const r = env.step(free);
    expect(r.info.valid).toBe(true);
    const build = (action: string, freeTextActions: readonly string[] = []) =>
      RetrievalExperienceModel.fromTrajectories(
        [task],
        [{ id: 'r', taskId: task.id, env: 'shop', source: 'offline', steps: [{ observation: start, action, reward: 0, done: false, valid: true }], success: false, reward: 0 }],
        new HashedEmbedder({ dim: 64 }),
        { ...PREDICTOR, useRewardModel: false, freeTextActions },
      );
    const valid = async (m: RetrievalExperienceModel) => (await m.step({ task, history: [], observation: start, action: 'search[another query]', demos: [] })).valid;
    const shown = await build(free);
    const listed = await build(start.actions[0] as string);
    const declared = await build(start.actions[0] as string, ['search[{}]']);
    try {
      expect(await valid(shown)).toBe(true);
      expect(await valid(listed)).toBe(false);
      expect(await valid(declared)).toBe(true);
    } finally {
      for (const m of [shown, listed, declared]) m.dispose();
    }
  });

  it('episode memory: repeating a search after visiting a product shows the results again, not the product page', async () => {
    // A real episode: search, open a product, back to search, the same search again.
    const spec = getEnvSpec('shop');
    const task = spec.tasks({ split: 'test', count: 1, seed: 11 })[0] as Task;
    const env = spec.create();
    const start = env.reset(task);
    const query = `search[${task.instruction.replace(/^i need (a |an |some )?/, '').split(',')[0]}]`;
    const results = env.step(query).observation;
    const product = results.actions.find((a) => /^click\[B0/.test(a)) as string;
    const item = env.step(product).observation;
    const back = env.step('click[back to search]').observation;
    expect(back.actions.some((a) => a.startsWith('search['))).toBe(true);
    const history: HistoryStep[] = [
      { observation: start, action: query },
      { observation: results, action: product },
      { observation: item, action: 'click[back to search]' },
    ];
    const step = await model.step({ task, history, observation: back, action: query, demos: [] });
    expect(step.observation).toEqual(results);
    expect(step.reasoning).toMatch(/taken earlier in this episode/);
  });

  it('a simulated item page lists the options its actions offer, and an option chosen shows as selected', async () => {
    // A neighbour's "(selected: 8 fl oz)" -> "(selected: 16 fl oz)" was applied where "8" last
    // stood in this page's line, "[8 fl oz]", which became a second "[16 fl oz]" with nothing
    // selected; the evidence then counted an option offered but not listed as a choice the
    // instruction did not ask for, and paid right purchases in part.
    const held = [...generateOfflineData(getEnvSpec('shop'), { episodes: 40, seed: 41, policy: 'noisy:0.3', split: 'test' })];
    const NAV = new Set(['description', 'features', '< prev', 'back to search', 'buy now', 'next >']);
    const optionLines = (o: Observation): string[] => o.text.split('\n').filter((l) => /^[a-z ]+: \[/.test(l));
    const rng = new Rng(9);
    let pages = 0;
    let mismatched = 0;
    let choices = 0;
    let shownSelected = 0;
    for (const { task, trajectory } of held) {
      let observation = trajectory.steps[0]!.observation;
      const history: HistoryStep[] = [];
      for (let i = 0; i < 15 && observation.actions.length > 0; i++) {
        // Follow the recorded episode to a product page, then choose options at random.
        const recorded = trajectory.steps[i]?.action;
        const lines = optionLines(observation);
        const options = observation.actions.filter((a) => /^click\[/.test(a) && !NAV.has(a.slice(6, -1)) && lines.some((l) => l.includes(`[${a.slice(6, -1)}]`)));
        const action = options.length > 0 && rng.next() < 0.8 ? rng.pick(options) : recorded && observation.actions.includes(recorded) ? recorded : rng.pick(observation.actions);
        const step = await model.step({ task, history: history.slice(), observation, action, demos: [] });
        if (step.done) break;
        history.push({ observation, action });
        observation = step.observation;
        if (!/^Page: item /m.test(observation.text)) continue;
        pages++;
        const listed = new Set(optionLines(observation).flatMap((l) => [...l.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1] as string)));
        const offered = new Set(observation.actions.map((a) => /^click\[(.+)\]$/.exec(a)?.[1]).filter((x): x is string => x !== undefined && !NAV.has(x)));
        if (listed.size !== offered.size || [...listed].some((x) => !offered.has(x))) mismatched++;
        if (options.includes(action)) {
          choices++;
          const value = action.slice(6, -1);
          if (optionLines(observation).some((l) => l.includes(`[${value}]`) && l.endsWith(`(selected: ${value})`))) shownSelected++;
        }
      }
    }
    expect(pages).toBeGreaterThan(100);
    expect(choices).toBeGreaterThan(50);
    expect(mismatched).toBe(0);
    // A guard, not the fix's check: the old code showed 342 of 344 choices selected, this one 333 of
    // 337 (a neighbour that chose in another list carries its edit to that list's line).
    console.log(`[item pages] ${pages} pages, ${mismatched} list other options than offered; ${shownSelected} of ${choices} choices shown selected`);
    expect(shownSelected / choices).toBeGreaterThan(0.98);
  });

  it('choosing an option again shows it chosen, and keeps the choices made since', async () => {
    // A real episode on a product with two option lists: choose x, then y of the other list,
    // then z of x's list; choosing x again must show x and y chosen, as the real page does. A
    // memory that carried over the lines the agent's step left as they were (right for what a
    // household agent holds) showed z; one that replayed the page as x first left it showed no y.
    const spec = getEnvSpec('shop');
    let checked = 0;
    for (const task of spec.tasks({ split: 'test', count: 40, seed: 11 }) as Task[]) {
      const env = spec.create();
      const history: HistoryStep[] = [];
      let observation = env.reset(task);
      const act = (action: string): void => {
        const next = env.step(action).observation;
        history.push({ observation, action });
        observation = next;
      };
      act(`search[${task.instruction.replace(/^i need (a |an |some )?/, '').split(',')[0]}]`);
      act(observation.actions.find((x) => /^click\[B0/.test(x)) as string);
      const lists = observation.text.split('\n').filter((l) => / \(selected: /.test(l)).map((l) => [...l.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1] as string));
      const [first, second] = lists;
      if (!first || !second || first.length < 2) continue;
      const [x, z] = first as [string, string];
      act(`click[${x}]`);
      act(`click[${second[0] as string}]`);
      act(`click[${z}]`);
      const step = await model.step({ task, history, observation, action: `click[${x}]`, demos: [] });
      const real = env.step(`click[${x}]`).observation;
      const chosen = (o: Observation): string[] => o.text.split('\n').flatMap((l) => [...l.matchAll(/\(selected: ([^)]+)\)/g)].map((m) => m[1] as string));
      expect(chosen(real)).toEqual([x, second[0]]);
      expect(chosen(step.observation)).toEqual(chosen(real));
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(5);
  });

  it('ignores whitespace around the action, as the real environments do', async () => {
    const traj = trajectories.find((t) => t.steps.length >= 3)!;
    const task = tasks.find((t) => t.id === traj.taskId)!;
    const [s0, s1] = traj.steps;
    const step = await model.step({ task, history: [], observation: s0!.observation, action: `  ${s0!.action} `, demos: [] });
    expect(step).toMatchObject({ valid: true, done: false, observation: s1!.observation });
    expect(step.reasoning).toMatch(/same state and action/);
  });

  it('on an unseen state, reuses the nearest stored transition rewritten for the new task, deterministically', async () => {
    const [held] = [...generateOfflineData(getEnvSpec('shop'), { episodes: 1, seed: 99, policy: 'expert', split: 'test' })];
    const { task, trajectory } = held!;
    const s0 = trajectory.steps[0]!;
    const request = { task, history: [], observation: s0.observation, action: s0.action, demos: [] };
    const step = await model.step(request);
    expect(step).toMatchObject({ valid: true, done: false, reward: 0 });
    // The verdict's reason, then the next state's, each a sentence of its own.
    expect(step.reasoning).toMatch(/\. Nearest stored transition/);
    // The neighbour's own instruction was rewritten into this task's.
    expect(step.observation.text).toContain(`Instruction: ${task.instruction}`);
    expect(step.observation.actions.length).toBeGreaterThan(0);
    // Same inputs, same prediction; and a model built again from the same data predicts the same.
    expect(await model.step(request)).toEqual(step);
    const again = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, freeTextActions: SHOP_FREE_TEXT, rewardModel: { epochs: 10 } });
    try {
      expect(await again.step(request)).toEqual(step);
      expect(await again.reset(task, [])).toEqual(await model.reset(task, []));
    } finally {
      again.dispose();
    }
  });

  it('marks an action outside the admissible list invalid and keeps the state', async () => {
    const { steps } = trajectories[0]!;
    const obs = steps[steps.length - 1]!.observation;
    const step = await model.step({ task: tasks[0]!, history: [], observation: obs, action: 'click[no such thing]', demos: [] });
    expect(step).toMatchObject({ valid: false, reward: 0, done: false });
    expect(step.observation.actions).toEqual(obs.actions);
    expect(step.observation.text).toContain('Invalid action');
  });

  it('ends an episode on the action that ended episodes in the data, with a reward', async () => {
    const bought = trajectories.find((t) => t.success);
    if (!bought) throw new Error('fixture has no successful trajectory');
    const task = tasks.find((t) => t.id === bought.taskId)!;
    const last = bought.steps[bought.steps.length - 1]!;
    expect(last.action).toBe('click[buy now]');
    const history = bought.steps.slice(0, -1).map((s) => ({ observation: s.observation, action: s.action }));
    const step = await model.step({ task, history, observation: last.observation, action: last.action, demos: [] });
    expect(step.done).toBe(true);
    expect(step.observation.text).toBe(EPISODE_OVER_TEXT);
    expect(step.reward).toBe(1);
    // The same purchase without having chosen the options the instruction names is no success.
    const skipped = await model.step({ task, history: history.slice(0, 2), observation: last.observation, action: last.action, demos: [] });
    expect(skipped.done).toBe(true);
    expect(skipped.reward).toBeLessThan(1);
  });

  it('only the action that made nearly all of its kind\'s endings ends an episode: clicking an option where buying succeeds ends nothing', async () => {
    // `click[{}]` on an option the instruction does not name shares its kind with `click[buy now]`,
    // which made nearly every ending of that kind; before, the evidence of a page ready to buy
    // let such a click end the episode with reward 1, and a policy trained in the simulator
    // "bought" by clicking an option.
    let clicks = 0;
    let ended = 0;
    for (const bought of trajectories.filter((t) => t.success)) {
      const task = tasks.find((t) => t.id === bought.taskId)!;
      const last = bought.steps[bought.steps.length - 1]!;
      const history = bought.steps.slice(0, -1).map((s) => ({ observation: s.observation, action: s.action }));
      const words = new Set(task.instruction.toLowerCase().split(/[\s,]+/));
      const options = last.observation.actions.filter((a) => /^click\[[a-z][a-z ]*\]$/.test(a) && !['click[buy now]', 'click[description]', 'click[features]', 'click[back to search]'].includes(a) && !a.slice(6, -1).split(' ').some((w) => words.has(w)));
      for (const action of options) {
        const step = await model.step({ task, history, observation: last.observation, action, demos: [] });
        clicks++;
        if (step.done) ended++;
      }
    }
    expect(clicks).toBeGreaterThan(20);
    expect(ended).toBe(0);
  });

  it('household: a generated task starts in its root task\'s recorded room and steps through it', async () => {
    // A generated household task keeps its parent's room (the validator enforces it), so its real
    // first state is its root's, which the data recorded, and so are the root's recorded steps;
    // before, a child started in the room of the nearest instruction (4 of these 30 first states
    // right) and stepped through other tasks' rooms. Teacher-forced on the children's real
    // noisy episodes: the next state's text as the real one, with the root known and without.
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 41, policy: 'noisy:0.3', split: 'train' })];
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    const children = await new RecombinationTaskGenerator({ seed: 2 }).generate(train.map((d) => d.task), 30);
    const score = { rooted: { first: 0, next: 0 }, unrooted: { first: 0, next: 0 }, steps: 0 };
    const rng = new Rng(7);
    try {
      for (const child of children) {
        const { steps } = runEpisode(spec.create(), child, noisyPolicy(0.3), { rng });
        const { rootId: _, ...unrooted } = child;
        for (const [key, task] of [['rooted', child], ['unrooted', unrooted]] as const) {
          const first = await hh.reset(task, []);
          if (first.text === steps[0]?.observation.text && first.actions.join('|') === steps[0]?.observation.actions.join('|')) score[key].first++;
          for (let i = 0; i + 1 < steps.length; i++) {
            const s = steps[i] as (typeof steps)[number];
            if (!s.valid) continue;
            if (key === 'rooted') score.steps++;
            const history = steps.slice(0, i).map((x) => ({ observation: x.observation, action: x.action }));
            const next = await hh.step({ task, history, observation: s.observation, action: s.action, demos: [] });
            if (next.observation.text === steps[i + 1]?.observation.text) score[key].next++;
          }
        }
      }
    } finally {
      hh.dispose();
    }
    expect(children.length).toBe(30);
    expect(children.every((c) => c.rootId !== undefined)).toBe(true);
    expect(score.steps).toBeGreaterThan(150);
    expect(score.rooted.first).toBe(children.length);
    expect(score.unrooted.first).toBeLessThanOrEqual(children.length / 4);
    // Measured: 199 of 280 next states right with the root, 161 without.
    expect(score.rooted.next).toBeGreaterThanOrEqual(score.unrooted.next + 0.1 * score.steps);
  });

  it("household: a place keeps what the agent did not take, offers it again to an empty hand, a walk shows the place reached (closed until this episode opens it), and opening a drawer keeps every place to go to", async () => {
    // The scripted policy with 20% random actions, inside the simulator, on held-out tasks. The
    // test reads household's state line ("Location: desk 1; you see a, b. Holding: c.").
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 41, policy: 'noisy:0.3', split: 'train' })];
    const heldOut = spec.tasks({ split: 'test', count: 30, seed: 5 });
    const actor = referencePolicy('household');
    const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), PREDICTOR);
    const at = (o: Observation): { place: string; things: string[]; holding: string } => {
      const m = /Location: ([a-z]+ \d+)[^;.]*(?:; you see ([^.]*))?\. Holding: ([^.]*)\./.exec(o.text);
      const seen = m?.[2] ?? 'nothing';
      return { place: m?.[1] ?? '', things: seen === 'nothing' ? [] : seen.split(', ').map((t) => t.replace(/ \(.*\)$/, '')), holding: m?.[3] ?? '' };
    };
    const c = { walks: 0, walkWrong: 0, openUnopened: 0, takes: 0, takeWrong: 0, returns: 0, returnMissing: 0, states: 0, lostPlaces: 0 };
    try {
      for (const task of heldOut) {
        const rng = new Rng(7);
        let observation = spec.create().reset(task);
        const places = observation.actions.filter((a) => a.startsWith('go to ')).map((a) => a.slice('go to '.length));
        const history: HistoryStep[] = [];
        const visited = new Set<string>();
        const opened = new Set<string>();
        for (let t = 0; t < spec.maxSteps; t++) {
          const [scripted] = await actor.choose([{ instruction: task.instruction, history: history.map((h) => ({ action: h.action })), observation }]);
          const action = rng.chance(0.2) ? rng.pick(observation.actions) : (scripted as string);
          const r = await hh.step({ task, history: history.slice(), observation, action, demos: [] });
          history.push({ observation, action });
          if (r.done) break;
          const before = at(observation);
          const after = at(r.observation);
          const take = /^take (.+) from (.+)$/.exec(action);
          if (take) {
            c.takes++;
            if (JSON.stringify(after.things) !== JSON.stringify(before.things.filter((x) => x !== take[1]))) c.takeWrong++;
          }
          const go = /^go to (.+)$/.exec(action);
          if (go && visited.has(go[1] as string) && after.holding === 'nothing' && after.place === go[1]) {
            c.returns++;
            for (const thing of after.things) if (!thing.startsWith('desklamp') && !r.observation.actions.includes(`take ${thing} from ${go[1]}`)) c.returnMissing++;
          }
          const open = /^open (.+)$/.exec(action);
          if (open) opened.add(open[1] as string);
          if (go) {
            visited.add(go[1] as string);
            // Everything starts closed: a place shown open was opened by this episode.
            if (r.observation.text.includes(`${go[1]} (open)`) && !opened.has(go[1] as string)) c.openUnopened++;
            // The state line names the place reached, with a door state exactly where a door is offered.
            const door = /\((open|closed)\)/.test(r.observation.text.split('\n').pop() as string);
            c.walks++;
            if (after.place !== go[1] || door !== r.observation.actions.some((a) => /^(open|close) /.test(a))) c.walkWrong++;
          }
          c.states++;
          for (const p of places) if (p !== after.place && !r.observation.actions.includes(`go to ${p}`)) c.lostPlaces++;
          observation = r.observation;
        }
      }
    } finally {
      hh.dispose();
    }
    // Measured: a pick-up left the place's other things as they were on 36 of 39 (17 of 35 before
    // the rule: the neighbour's things were listed); empty-handed returns failed to offer a thing
    // listed there 1 time in 52 returns (18 in 60); a place to go to was missing 6 times over 777
    // states (771 over 725, when opening a drawer turned "go to cabinet 1" into "open cabinet 1");
    // 3 of 553 walks showed another place or door state (30 of 567 while a walk's place sentence
    // was edited word by word: "Location: fridge 1; you see nothing."); a walk showed a place
    // open, with its contents, that this episode had never opened 0 times in 548 walks (40 in 553
    // while a first walk could reuse another episode's walk to the place it had opened before).
    expect(c.walks).toBeGreaterThanOrEqual(200);
    expect(c.walkWrong).toBeLessThanOrEqual(10);
    expect(c.openUnopened).toBeLessThanOrEqual(5);
    expect(c.takes).toBeGreaterThanOrEqual(20);
    expect(c.takeWrong).toBeLessThanOrEqual(0.2 * c.takes);
    expect(c.returns).toBeGreaterThanOrEqual(20);
    expect(c.returnMissing).toBeLessThanOrEqual(6);
    expect(c.lostPlaces).toBeLessThanOrEqual(0.05 * c.states);
  });

  it('household: a task the data never recorded holds the thing its instruction names at one place', async () => {
    // A held-out task's room is hidden, so every place is a stand-in from other rooms; before the
    // rule, the named thing turned up nowhere on 41 of 100 held-out tasks the scripted policy searched
    // end to end. The scripted reference policy acts on what it is shown, inside the simulator.
    const spec = getEnvSpec('household');
    const train = [...generateOfflineData(spec, { episodes: 80, seed: 41, policy: 'noisy:0.3', split: 'train' })];
    const heldOut = spec.tasks({ split: 'test', count: 30, seed: 5 });
    const actor = referencePolicy('household');
    const score = async (namedThings: boolean): Promise<{ found: number; success: number; places: string[] }> => {
      const hh = await RetrievalExperienceModel.fromTrajectories(train.map((d) => d.task), train.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, namedThings });
      const out = { found: 0, success: 0, places: [] as string[] };
      try {
        for (const task of heldOut) {
          const kind = (task.instruction.match(/^put (?:a |two )?(?:clean |hot |cool )?(\w+?)s? in|^look at (\w+) under/) ?? []).slice(1).find((x) => x !== undefined) as string;
          let observation = spec.create().reset(task);
          const history: HistoryStep[] = [];
          let where = '';
          for (let t = 0; t < spec.maxSteps; t++) {
            const take = observation.actions.find((a) => a.startsWith(`take ${kind} `));
            if (take && where === '') where = take.split(' from ')[1] as string;
            const [action] = await actor.choose([{ instruction: task.instruction, history: history.map((h) => ({ action: h.action })), observation }]);
            const r = await hh.step({ task, history: history.slice(), observation, action: action as string, demos: [] });
            history.push({ observation, action: action as string });
            if (r.done) {
              if (r.reward >= 1) out.success++;
              break;
            }
            observation = r.observation;
          }
          if (where !== '') out.found++;
          out.places.push(where);
        }
      } finally {
        hh.dispose();
      }
      return out;
    };
    const withRule = await score(true);
    const without = await score(false);
    const again = await score(true);
    expect(again.places).toEqual(withRule.places);
    // Measured: found on 28 of 30 with the rule (14 without); the scripted policy succeeds on 25 (11).
    expect(withRule.found).toBeGreaterThanOrEqual(26);
    expect(withRule.found).toBeGreaterThanOrEqual(without.found + 8);
    expect(withRule.success).toBeGreaterThanOrEqual(without.success + 8);
  });

  it('reset gives a stored first state rewritten for the new task', async () => {
    const unseen = getEnvSpec('shop').tasks({ split: 'test', count: 3, seed: 11 });
    for (const task of unseen) {
      const obs = await model.reset(task, []);
      expect(obs.text).toContain(task.instruction);
      expect(obs.actions.length).toBeGreaterThan(0);
    }
  });

  it("a generated task's first state offers the searches its own instruction asks for, as the real page does", async () => {
    // The data-recorded first state of the root task, with what it quotes of the root's
    // instruction quoted again from the generated one (before, the root's queries: 2 of these 40 right).
    const generated = await new RecombinationTaskGenerator({ seed: 7 }).generate(tasks, 40);
    expect(generated.length).toBeGreaterThanOrEqual(30);
    const spec = getEnvSpec('shop');
    let same = 0;
    for (const task of generated) {
      const real = spec.create().reset(task);
      const simulated = await model.reset(task, []);
      if (simulated.text === real.text && JSON.stringify(simulated.actions) === JSON.stringify(real.actions)) same++;
    }
    expect(same).toBeGreaterThanOrEqual(Math.ceil(0.95 * generated.length));
  });

  it("going back to the search page shows the searches this task's instruction asks for, not the stored episode's", async () => {
    // Expert and random episodes, as a run's seed data: the page comes from another episode's
    // `click[back to search]`, whose suggested queries were that episode's (0 of 30 right before).
    const spec = getEnvSpec('shop');
    const seed = [...generateOfflineData(spec, { episodes: 60, seed: 4, policy: 'expert', split: 'train' }), ...generateOfflineData(spec, { episodes: 30, seed: 5, policy: 'noisy:1', split: 'train' })];
    const sim = await RetrievalExperienceModel.fromTrajectories(seed.map((d) => d.task), seed.map((d) => d.trajectory), new HashedEmbedder({ dim: 128 }), { ...PREDICTOR, rewardModel: { epochs: 10 } });
    try {
      let same = 0;
      let tried = 0;
      for (const task of spec.tasks({ split: 'train', count: 30, seed: 99 })) {
        const env = spec.create();
        const search = env.reset(task).actions[0] as string;
        const back = 'click[back to search]';
        const simulatedFirst = await sim.reset(task, []);
        const simulated = await sim.step({ task, history: [], observation: simulatedFirst, action: search, demos: [] });
        if (!env.step(search).observation.actions.includes(back) || !simulated.observation.actions.includes(back)) continue;
        tried++;
        const real = env.step(back).observation;
        const again = await sim.step({ task, history: [{ observation: simulatedFirst, action: search }], observation: simulated.observation, action: back, demos: [] });
        if (JSON.stringify(again.observation.actions) === JSON.stringify(real.actions)) same++;
      }
      expect(tried).toBeGreaterThanOrEqual(20);
      expect(same).toBeGreaterThanOrEqual(Math.ceil(0.9 * tried));
    } finally {
      sim.dispose();
    }
  });

  it('needs valid data and tasks for every trajectory', async () => {
    expect(() => transitionsFromTrajectories([], trajectories.slice(0, 1))).toThrow(RetrievalDataError);
    await expect(RetrievalExperienceModel.fromTransitions([], new HashedEmbedder({ dim: 16 }))).rejects.toThrow(/at least one valid/);
  });
});

describe('grounding: a small domain with a planted shortcut', () => {
  // Same document names in every task, different contents: an unrecorded document shown as another
  // task's, its words rewritten for this one, made "open doc k, delete it" pay inside the simulator.
  const shortcutData = shortcutTasks(80, 1);
  const dataRng = new Rng(2);
  const recorded = shortcutData.map((t, i) => shortcutEpisode(t, i % 2 === 0 ? 0.2 : 1, dataRng));
  let grounded: RetrievalExperienceModel;
  let ablation: RetrievalExperienceModel;
  beforeAll(async () => {
    grounded = await RetrievalExperienceModel.fromTrajectories(shortcutData, recorded, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 10 } });
    ablation = await RetrievalExperienceModel.fromTrajectories(shortcutData, recorded, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 10 }, grounding: false });
  });
  afterAll(() => {
    grounded.dispose();
    ablation.dispose();
  });

  it('a recorded transition is known and a made-up one is unknown, and the unknown step halts its episode without success', async () => {
    let known = 0;
    let madeUp = 0;
    for (const [i, task] of shortcutData.entries()) {
      const steps = recorded[i]!.steps;
      const history: HistoryStep[] = [];
      for (const step of steps) {
        const s = await grounded.step({ task, history: history.slice(), observation: step.observation, action: step.action, demos: [] });
        expect(s.grounding?.unknown).toBe(false);
        expect(s.grounding?.support).toBe(1);
        expect(s.reward).toBe(step.reward);
        known++;
        history.push({ observation: step.observation, action: step.action });
      }
      // Documents this task's episode never opened: what they hold is made up.
      const first = new ShortcutWorld(task).reset();
      for (const doc of DOCS) {
        if (steps.some((x) => x.action === `open ${doc}`)) continue;
        const s = await grounded.step({ task, history: [], observation: first, action: `open ${doc}`, demos: [] });
        expect(s.grounding?.unknown).toBe(true);
        expect(s.grounding?.support).toBeLessThan(grounded.grounding!.threshold);
        expect(s.done).toBe(true);
        expect(s.observation.actions).toEqual([]);
        expect(s.reward).toBe(grounded.grounding!.haltPenalty);
        expect(s.reward).toBeLessThan(0);
        madeUp++;
      }
    }
    expect(known).toBeGreaterThan(100);
    expect(madeUp).toBeGreaterThan(50);
    // The ablation leaves steps ungrounded.
    const s = await ablation.step({ task: shortcutData[0]!, history: [], observation: recorded[0]!.steps[0]!.observation, action: recorded[0]!.steps[0]!.action, demos: [] });
    expect(s.grounding).toBeUndefined();
  });

  it('states the evidence-bound reward\'s precision, measured on every recorded episode held out once', () => {
    const g = grounded.grounding!;
    expect(g.folds).toBe(3);
    expect(g.heldOutSteps).toBe(recorded.reduce((n, t) => n + t.steps.filter((x) => x.valid).length, 0));
    expect(g.success.successes).toBe(recorded.filter((t) => t.success).length);
    expect(g.success.granted).toBeGreaterThan(0);
    expect(g.success.precision).toBeGreaterThan(0.9);
    expect(g.success.recall).toBeGreaterThan(0.5);
    expect(g.haltPenalty).toBeCloseTo(-recorded.filter((t) => t.success).length / recorded.length, 10);
    expect(g.bySource.reduce((n, b) => n + b.steps, 0)).toBe(g.heldOutSteps);
  });

  it('GRPO inside the grounded simulator no longer learns the shortcut the ungrounded one pays for', async () => {
    /** GRPO on a policy with one logit per action string (masked to the admissible ones), inside `sim`; then its false successes. */
    const falseSuccesses = async (sim: RetrievalExperienceModel): Promise<{ sim: number; falseOnes: number }> => {
      const logits = new Map<string, number>();
      const choose = (actions: readonly string[], rng: Rng): string => {
        const ls = actions.map((a) => logits.get(a) ?? 0);
        const top = Math.max(...ls);
        const ps = ls.map((l) => Math.exp(l - top));
        let u = rng.next() * ps.reduce((x, y) => x + y, 0);
        for (let i = 0; i < actions.length; i++) if ((u -= ps[i]!) <= 0) return actions[i]!;
        return actions[actions.length - 1]!;
      };
      const play = async (task: Task, rng: Rng): Promise<{ actions: string[]; reward: number; real: number }> => {
        let observation = new ShortcutWorld(task).reset();
        const history: HistoryStep[] = [];
        let reward = 0;
        for (let t = 0; t < MAX_STEPS && observation.actions.length > 0; t++) {
          const action = choose(observation.actions, rng);
          const s = await sim.step({ task: agentView(task), history: history.slice(), observation, action, demos: [] });
          history.push({ observation, action });
          if (s.done) {
            reward = s.reward;
            break;
          }
          observation = s.observation;
        }
        const world = new ShortcutWorld(task);
        world.reset();
        let real = 0;
        for (const h of history) {
          const r = world.step(h.action);
          real = r.reward;
          if (r.done) break;
        }
        return { actions: history.map((h) => h.action), reward, real };
      };
      const pool = shortcutData.slice(0, 40);
      const rng = new Rng(5);
      for (let it = 0; it < 20; it++) {
        const episodes: { actions: string[]; reward: number }[] = [];
        for (const task of rng.sample(pool, 8)) for (let g = 0; g < 8; g++) episodes.push(await play(task, rng));
        const advantages = groupAdvantages(episodes.map((e) => e.reward), 8, 'group');
        episodes.forEach((e, i) => {
          for (const a of e.actions) logits.set(a, (logits.get(a) ?? 0) + 0.3 * advantages[i]!);
        });
      }
      let simSuccess = 0;
      let falseOnes = 0;
      const evalRng = new Rng(9);
      for (const task of pool) {
        for (let k = 0; k < 4; k++) {
          const e = await play(task, evalRng);
          if (e.reward >= 1) simSuccess++;
          if (e.reward >= 1 && e.real < 1) falseOnes++;
        }
      }
      return { sim: simSuccess, falseOnes };
    };
    const ungrounded = await falseSuccesses(ablation);
    // The shortcut is there to be found: most of what the ungrounded simulator paid for was false.
    expect(ungrounded.falseOnes).toBeGreaterThanOrEqual(10);
    const honest = await falseSuccesses(grounded);
    expect(honest.falseOnes).toBeLessThanOrEqual(1);
  });
});

describe('the retrieval model never reads a hidden goal', () => {
  const MARKER = 'ZQXMARKER';
  /** A goal that carries a unique marker and records every read of its fields. */
  function trapped(goal: JsonValue, id: string, reads: string[]): JsonValue {
    const withMarker = { ...(goal as Record<string, JsonValue>), secret: `${MARKER}-${id}`, targetId: `${MARKER}T${id}` };
    return new Proxy(withMarker, {
      get(target, key, receiver) {
        reads.push(String(key));
        return Reflect.get(target, key, receiver);
      },
      ownKeys(target) {
        reads.push('ownKeys');
        return Reflect.ownKeys(target);
      },
    });
  }

  for (const env of ['shop', 'household'] as const) {
    it(`${env}: no synthetic state, action list or reasoning carries goal data, over many random rollouts`, async () => {
      const spec = getEnvSpec(env);
      const reads: string[] = [];
      const trainData = [...generateOfflineData(spec, { episodes: 60, seed: 2, policy: 'noisy:0.3', split: 'train' })];
      const trapTask = (t: Task): Task => ({ ...t, goal: trapped(t.goal, t.id, reads) });
      const outputs: string[] = [];
      let steps = 0;
      // Grounded (the calibration replays the data), and the predictor alone (whose rollouts go on where grounded ones halt).
      for (const grounding of [true, false]) {
        const sim = await RetrievalExperienceModel.fromTrajectories(
          trainData.map((d) => trapTask(d.task)),
          trainData.map((d) => d.trajectory),
          new HashedEmbedder({ dim: 128 }),
          { rewardModel: { epochs: 5 }, grounding },
        );
        try {
          const heldOut = spec.tasks({ split: 'test', count: 10, seed: 5 }).map(trapTask);
          const grounded = trainData.slice(0, 10).map((d) => trapTask(d.task));
          const rng = new Rng(7);
          for (const task of [...grounded, ...heldOut]) {
            const real = trainData.find((d) => d.task.id === task.id)?.trajectory.steps[0]?.observation;
            let state: Observation = real ?? (await sim.reset(task, []));
            outputs.push(state.text, ...state.actions);
            const history: HistoryStep[] = [];
            for (let t = 0; t < 15 && state.actions.length > 0; t++) {
              const action = rng.pick(state.actions);
              const out = await sim.step({ task, history: history.slice(), observation: state, action, demos: [] });
              steps++;
              outputs.push(out.observation.text, ...out.observation.actions, out.reasoning);
              history.push({ observation: state, action });
              if (out.done) break;
              state = out.observation;
            }
          }
        } finally {
          sim.dispose();
        }
      }
      expect(steps).toBeGreaterThan(100);
      expect(outputs.filter((o) => o.includes(MARKER))).toEqual([]);
      expect(reads).toEqual([]);
    });
  }
});

describe('the retrieval model never touches an environment', () => {
  it('imports nothing under src/envs or src/train, through any form of import', () => {
    const graph = importGraph('src/experience/retrieval/model.ts');
    expect(graph.files.length).toBeGreaterThan(3);
    expect(graph.files).toEqual(expect.arrayContaining(['src/experience/retrieval/model.ts', 'src/experience/retrieval/reward-model.ts', 'src/experience/retrieval/evidence.ts']));
    expect(graph.files.filter((f) => f.startsWith('src/envs/'))).toEqual([]);
    expect(graph.files.filter((f) => f.startsWith('src/train/'))).toEqual([]);
    // Nothing it imports is left unchecked (a computed dynamic import, a path naming no file).
    expect(graph.unresolved).toEqual([]);
  });

  it('the graph walker does see env imports where they exist', () => {
    expect(importGraph('src/train/fidelity.ts').files.some((f) => f.startsWith('src/envs/'))).toBe(true);
    expect(importGraph('src/cli/fidelity.ts').files).toEqual(expect.arrayContaining(['src/train/fidelity.ts', 'src/experience/retrieval/model.ts']));
  });

  it('the graph walker follows side-effect imports and re-exports, which the retrieval model could hide an env behind', () => {
    const source = ["import './register-envs.ts';", "export * from '../envs/registry.ts';", "const m = await import(`../train/fidelity.ts`);"].join('\n');
    expect(importSpecifiers(source)).toEqual(['../envs/registry.ts', './register-envs.ts', '../train/fidelity.ts']);
  });
});

describe('grounding: tasks recorded in a cycle of kinds', () => {
  // Six kinds of task, each completed by its own verb, recorded in turn; each task once completed
  // and once abandoned. Cross-fitting folds dealt by position held out two kinds whole, whose
  // verbs the other folds never showed completing a task: their successes were never granted.
  const VERBS = ['sign', 'mail', 'file', 'print', 'stamp', 'ship'] as const;
  const CLIENTS = ['ada', 'bo', 'cy', 'dee', 'eli', 'fay', 'gus', 'hal', 'ivy', 'jo'];
  const tasks: Task[] = Array.from({ length: 60 }, (_, i) => {
    const verb = VERBS[i % 6] as string;
    return { id: `kind-${i}`, env: 'kinds', instruction: `${verb} the form of client ${CLIENTS[Math.floor(i / 6)]}`, goal: { verb }, split: 'train', origin: 'seed' };
  });
  const episode = (task: Task, complete: boolean): Trajectory => {
    const verb = (task.goal as { verb: string }).verb;
    const desk: Observation = { text: `Task: ${task.instruction}\nA form lies on the desk.`, actions: ['prepare form', 'leave'] };
    const ready: Observation = { text: `Task: ${task.instruction}\nThe form is prepared.`, actions: [`${verb} form`, 'leave'] };
    const last = complete ? `${verb} form` : 'leave';
    return {
      id: `${task.id}-${complete ? 'done' : 'left'}`,
      taskId: task.id,
      env: 'kinds',
      source: 'offline',
      steps: [
        { observation: desk, action: 'prepare form', reward: 0, done: false, valid: true },
        { observation: ready, action: last, reward: complete ? 1 : 0, done: true, valid: true },
      ],
      reward: complete ? 1 : 0,
      success: complete,
    };
  };
  const recorded = tasks.flatMap((t) => [episode(t, true), episode(t, false)]);

  it('grants held-out successes of every kind', async () => {
    const sim = await RetrievalExperienceModel.fromTrajectories(tasks, recorded, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 10 } });
    try {
      const g = sim.grounding!;
      expect(g.success.successes).toBe(60);
      expect(g.success.recall).toBeGreaterThanOrEqual(0.9);
      expect(g.success.precision).toBeGreaterThanOrEqual(0.9);
    } finally {
      sim.dispose();
    }
  });
});

describe('withholding tasks', () => {
  it("predicts a withheld task's recorded steps instead of replaying them, with the same grounding", async () => {
    const sim = await RetrievalExperienceModel.fromTrajectories(tasks, trajectories, new HashedEmbedder({ dim: 128 }), { rewardModel: { epochs: 5 } });
    const withheldTasks = tasks.slice(0, 5);
    let without: RetrievalExperienceModel | undefined;
    try {
      without = await sim.withholding(new Set(withheldTasks.map((t) => t.id)));
      expect(without.grounding).toEqual(sim.grounding);
      expect(without.size).toBeLessThan(sim.size);
      let replayed = 0;
      let predicted = 0;
      for (const [i, task] of withheldTasks.entries()) {
        const history: HistoryStep[] = [];
        for (const step of trajectories[i]!.steps) {
          if (!step.valid) continue;
          const request = { task, history: history.slice(), observation: step.observation, action: step.action, demos: [] };
          const own = await sim.step(request);
          const other = await (without as RetrievalExperienceModel).step(request);
          expect(own.grounding?.support).toBe(1);
          replayed++;
          if ((other.grounding?.support ?? 1) < 1) predicted++;
          history.push({ observation: step.observation, action: step.action });
        }
      }
      expect(replayed).toBeGreaterThan(10);
      // Outside this world's own recording the support is an estimate, never a recorded fact's 1.
      expect(predicted).toBeGreaterThanOrEqual(Math.ceil(0.5 * replayed));
      await expect(sim.withholding(new Set(tasks.map((t) => t.id)))).rejects.toThrow(RetrievalDataError);
    } finally {
      without?.dispose();
      sim.dispose();
    }
  });
});
