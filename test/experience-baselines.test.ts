import { describe, expect, it } from 'vitest';
import type { AgentTask, EnvName, Observation, Step, Task, Trajectory } from '../src/core/types.ts';
import { EchoExperienceModel, MajorityRuleExperienceModel } from '../src/experience/baselines.ts';
import { EPISODE_OVER_TEXT, transitionsFromTrajectories } from '../src/experience/retrieval/model.ts';

const task = (id: string, env: EnvName, instruction: string): Task => ({ id, env, instruction, goal: { hidden: id }, split: 'train', origin: 'seed' });
const agentTask = (id: string, env: EnvName, instruction: string): AgentTask => ({ id, env, instruction, split: 'train', origin: 'seed' });

/** One step: a state that names the step, the action, its reward and whether it ended the episode. */
type StepSpec = [action: string, reward?: number, done?: boolean, valid?: boolean];

/** A trajectory of `steps`, each taken in a state of its own that offers the action. */
function trajectory(id: string, t: Task, steps: readonly StepSpec[]): Trajectory {
  const out: Step[] = steps.map(([action, reward = 0, done = false, valid = true], i) => ({
    observation: { text: `Instruction: ${t.instruction}\n${id} state ${i}`, actions: valid ? [action, 'click[back to search]'] : ['click[back to search]'] },
    action,
    reward,
    done,
    valid,
  }));
  const last = steps[steps.length - 1];
  const reward = last?.[2] ? (last[1] ?? 0) : 0;
  return { id, taskId: t.id, env: t.env, source: 'offline', steps: out, reward, success: reward === 1 };
}

/** A shop episode: search, open a product, maybe pick options, then buy with `reward`. */
function shopEpisode(i: number, reward: number, options: string[] = []): { task: Task; trajectory: Trajectory } {
  const t = task(`shop-${i}`, 'shop', `i need soap number ${i}, and price lower than 30.00 dollars`);
  const steps: StepSpec[] = [['search[soap]'], [`click[B0AAAA000${i}]`], ...options.map((o): StepSpec => [o]), ['click[buy now]', reward, true]];
  return { task: t, trajectory: trajectory(`s${i}`, t, steps) };
}

function model(episodes: readonly { task: Task; trajectory: Trajectory }[]): MajorityRuleExperienceModel {
  return new MajorityRuleExperienceModel(
    transitionsFromTrajectories(
      episodes.map((e) => e.task),
      episodes.map((e) => e.trajectory),
    ),
  );
}

const shopTask = agentTask('new', 'shop', 'i need red soap, and price lower than 20.00 dollars');
const itemPage: Observation = {
  text: `Instruction: ${shopTask.instruction}\nRed soap\nPrice: $12.00`,
  actions: ['click[back to search]', 'click[< prev]', 'click[red]', 'click[B0ZZZZ9999]', 'click[B0AAAA0001]', 'click[buy now]', 'search[...]'],
};
const step = (m: EchoExperienceModel | MajorityRuleExperienceModel, action: string, observation: Observation = itemPage, t: AgentTask = shopTask) =>
  m.step({ task: t, history: [], observation, action, demos: [] });

describe('EchoExperienceModel', () => {
  // The environment declares its search box's free text, as the shop does.
  const echo = new EchoExperienceModel(['search[{}]']);

  it('is the echo kind and starts from the instruction alone', async () => {
    expect(echo.kind).toBe('echo');
    expect(await echo.reset(shopTask, [])).toEqual({ text: shopTask.instruction, actions: [] });
  });

  it('the next state is the current state (a copy), reward 0, never done', async () => {
    for (const action of ['click[red]', 'click[buy now]', 'click[< prev]', '  click[buy now] ', 'search[green soap]']) {
      const s = await step(echo, action);
      expect(s).toEqual({ reasoning: 'echo: nothing changes.', observation: itemPage, reward: 0, done: false, valid: true });
      expect(s.observation.actions).not.toBe(itemPage.actions);
    }
    // Without the declaration, only listed actions are admissible.
    expect((await step(new EchoExperienceModel(), 'search[green soap]')).valid).toBe(false);
  });

  it('an action outside the admissible list is invalid, and the state is kept', async () => {
    const s = await step(echo, 'click[blue]');
    expect(s).toEqual({
      reasoning: '"click[blue]" is not admissible here.',
      observation: { text: `Invalid action: click[blue] is not admissible here.\n${itemPage.text}`, actions: itemPage.actions },
      reward: 0,
      done: false,
      valid: false,
    });
    // A search is only admissible where the state offers a search box.
    const noSearch = { text: 'Item page', actions: ['click[buy now]'] };
    expect((await step(echo, 'search[soap]', noSearch)).valid).toBe(false);
    expect((await step(echo, 'search[]')).valid).toBe(false);
  });
});

describe('MajorityRuleExperienceModel', () => {
  // click[buy now] ends with reward 1 in 3 of 5 episodes and with 0.5 in 2.
  const shop = [shopEpisode(1, 1, ['click[red]']), shopEpisode(2, 1, ['click[red]']), shopEpisode(3, 1), shopEpisode(4, 0.5), shopEpisode(5, 0.5)];
  // Four invalid purchases (no state offered it): they are not outcomes and must not count.
  const invalidTask = task('shop-bad', 'shop', 'i need soap, and price lower than 10.00 dollars');
  const invalid = {
    task: invalidTask,
    trajectory: trajectory('bad', invalidTask, [['search[soap]'], ['click[buy now]', 0, false, false], ['click[buy now]', 0, false, false], ['click[buy now]', 0, false, false], ['click[buy now]', 0, false, false]]),
  };
  // put {} in/on {}: "put apple 1" ends episodes 4 times; "put mug 1" is seen 3 times, ending one episode.
  const appleEpisode = (i: number): { task: Task; trajectory: Trajectory } => {
    const t = task(`house-${i}`, 'household', 'put a cool apple in fridge.');
    return { task: t, trajectory: trajectory(`h${i}`, t, [['go to fridge 1'], ['put apple 1 in/on fridge 1', 1, true]]) };
  };
  const apple = [1, 2, 3, 4].map(appleEpisode);
  const mugTask = task('house-mug', 'household', 'put a clean mug in fridge.');
  const mug = { task: mugTask, trajectory: trajectory('hm', mugTask, [['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1', 1, true]]) };
  const majority = model([...shop, invalid, ...apple, mug]);

  it('the fixture has the transitions it is meant to have', () => {
    const transitions = transitionsFromTrajectories([...shop, invalid, ...apple, mug].map((e) => e.task), [...shop, invalid, ...apple, mug].map((e) => e.trajectory));
    const buys = transitions.filter((t) => t.action === 'click[buy now]' && t.valid);
    expect(buys.map((t) => [t.reward, t.done, t.next === null])).toEqual([
      [1, true, true],
      [1, true, true],
      [1, true, true],
      [0.5, true, true],
      [0.5, true, true],
    ]);
    expect(transitions.filter((t) => t.action === 'click[buy now]' && !t.valid)).toHaveLength(4);
    expect(transitions.filter((t) => t.action === 'put mug 1 in/on fridge 1').map((t) => t.done)).toEqual([false, false, true]);
  });

  it('is the majority kind and starts from the instruction alone', async () => {
    expect(majority.kind).toBe('majority');
    expect(await majority.reset(shopTask)).toEqual({ text: shopTask.instruction, actions: [] });
  });

  it('an action seen at least five times gets its own majority outcome: click[buy now] ends with reward 1', async () => {
    const s = await step(majority, 'click[buy now]');
    expect(s).toEqual({ reasoning: 'majority outcome of this kind of action in the data.', observation: { text: EPISODE_OVER_TEXT, actions: [] }, reward: 1, done: true, valid: true });
    // Its template click[{}] mostly continues (product and option clicks): the exact action wins.
    expect(await step(majority, 'click[B0ZZZZ9999]')).toMatchObject({ done: false, reward: 0, observation: itemPage });
  });

  it('the majority, not the best: 2 of 5 with reward 1 and 3 near 0.5 ends with 0.5', async () => {
    const rewards = [1, 1, 0.5, 0.48, 0.52];
    const m = model(rewards.map((r, i) => shopEpisode(i + 1, r)));
    expect(await step(m, 'click[buy now]')).toMatchObject({ done: true, reward: 0.5 });
  });

  it('an exact action seen fewer than five times falls back to its template majority', async () => {
    const house = agentTask('h-new', 'household', 'put a cool mug in fridge.');
    const kitchen: Observation = { text: 'You are at fridge 1.', actions: ['put mug 1 in/on fridge 1', 'put pear 2 in/on shelf 3', 'go to fridge 1', 'open drawer 2'] };
    // "put mug 1 in/on fridge 1" went on 2 of 3 times, but 3 < 5: put {} in/on {} ended 5 of 7 times with reward 1.
    expect(await step(majority, 'put mug 1 in/on fridge 1', kitchen, house)).toMatchObject({ done: true, reward: 1, observation: { text: EPISODE_OVER_TEXT, actions: [] } });
    expect(await step(majority, 'put pear 2 in/on shelf 3', kitchen, house)).toMatchObject({ done: true, reward: 1 });
    // go to {} never ended an episode.
    expect(await step(majority, 'go to fridge 1', kitchen, house)).toMatchObject({ done: false, reward: 0, observation: kitchen });
    // With five occurrences the exact action's own majority (it went on) wins over the template's.
    const mug5 = {
      task: mugTask,
      trajectory: trajectory('hm5', mugTask, [['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1'], ['put mug 1 in/on fridge 1', 1, true]]),
    };
    // put {} in/on {} still ends most often: 7 apples and 1 mug end, 4 mugs go on.
    const trusted = model([...[1, 2, 3, 4, 5, 6, 7].map(appleEpisode), mug5]);
    expect(await step(trusted, 'put mug 1 in/on fridge 1', kitchen, house)).toMatchObject({ done: false, reward: 0, observation: kitchen });
    expect(await step(trusted, 'put pear 2 in/on shelf 3', kitchen, house)).toMatchObject({ done: true, reward: 1 });
  });

  it('unseen actions go on with reward 0 and the same state', async () => {
    const house = agentTask('h-new', 'household', 'put a cool mug in fridge.');
    const kitchen: Observation = { text: 'You are at fridge 1.', actions: ['open drawer 2', 'look'] };
    expect(await step(majority, 'open drawer 2', kitchen, house)).toEqual({
      reasoning: 'majority outcome of this kind of action in the data.',
      observation: kitchen,
      reward: 0,
      done: false,
      valid: true,
    });
    expect(await step(majority, 'look', kitchen, house)).toMatchObject({ done: false, reward: 0, valid: true });
    expect(await step(model([]), 'click[buy now]')).toMatchObject({ done: false, reward: 0, observation: itemPage });
  });

  it('invalid transitions in the data are no outcomes, and an inadmissible action is invalid', async () => {
    // Counted, the four invalid purchases (reward 0, going on) would outvote the three rewards of 1.
    expect(await step(majority, 'click[buy now]')).toMatchObject({ done: true, reward: 1 });
    const s = await step(majority, 'click[blue]');
    expect(s).toEqual({
      reasoning: '"click[blue]" is not admissible here.',
      observation: { text: `Invalid action: click[blue] is not admissible here.\n${itemPage.text}`, actions: itemPage.actions },
      reward: 0,
      done: false,
      valid: false,
    });
  });
});
