import { describe, expect, it } from 'vitest';
import { type Observation, type Task, agentView } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import {
  DEFAULT_PROMPT_CONFIG,
  clip,
  correctionTurn,
  demosBlock,
  experienceSystemPrompt,
  firstStepTurn,
  followUpStepTurn,
  historyBlock,
  resetTurn,
  selectDemos,
  type StepTurnInput,
  compactState,
  sharedLabel,
  taskLine,
  listActions,
  demoKey,
} from '../src/experience/prompt.ts';
import type { Demonstration, HistoryStep } from '../src/experience/types.ts';

/** A real shop episode: the task, its first observations and expert transitions as demos. */
function shopEpisode(): { task: Task; steps: { observation: Observation; action: string }[]; demos: Demonstration[] } {
  const spec = getEnvSpec('shop');
  const [task] = spec.tasks({ split: 'train', count: 1, seed: 1 });
  const env = spec.create();
  let observation = env.reset(task as Task);
  const steps: { observation: Observation; action: string }[] = [];
  const demos: Demonstration[] = [];
  for (let i = 0; i < 3; i++) {
    const action = env.expertAction();
    const r = env.step(action);
    steps.push({ observation, action });
    demos.push({ state: observation.text, action, nextState: r.observation.text, nextActions: r.observation.actions, reward: r.reward, done: r.done, valid: r.info.valid, score: 0.9 - i * 0.1 });
    observation = r.observation;
    if (r.done) break;
  }
  return { task: task as Task, steps, demos };
}

const small = { ...DEFAULT_PROMPT_CONFIG, maxDemoChars: 160, maxStateChars: 400, historyStateChars: 80 };

describe('experience prompts', () => {
  it('system prompt: the domain rules (snapshot)', () => {
    const shop = experienceSystemPrompt('shop', { description: getEnvSpec('shop').description });
    expect(shop).toMatchSnapshot();
    expect(shop).toMatch(/invalid action changes nothing.*failure state/s);
    expect(shop).toMatch(/it is 0 on every step except the final one/);
    expect(shop).toMatch(/"reasoning".*"next_state".*"reward".*"done".*"valid"/s);
    // What the environment declares of itself introduces it; nothing is known of a name alone.
    const spec = getEnvSpec('household');
    expect(experienceSystemPrompt(spec.name, { description: spec.description })).toContain(`called "household": ${spec.description}.`);
    expect(experienceSystemPrompt('household')).toBe(experienceSystemPrompt('webarena').replaceAll('webarena', 'household'));
    expect(experienceSystemPrompt('webarena')).toMatch(/text environment called "webarena"\./);
    expect(experienceSystemPrompt('webarena', { description: 'a browser. ' })).toContain('called "webarena": a browser.\n');
  });

  it('first turn: task, retrieved transitions, state and action (snapshot)', () => {
    const { task, steps, demos } = shopEpisode();
    const input: StepTurnInput = { task, history: [], observation: (steps[0] as HistoryStep).observation, action: (steps[0] as HistoryStep).action, demos };
    const turn = firstStepTurn(input, small);
    expect(turn).toMatchSnapshot();
    expect(turn.startsWith(`Task: ${task.instruction}`)).toBe(true);
    expect(turn).toContain('Real transitions retrieved for similar states and actions:');
    for (let i = 1; i <= 3; i++) expect(turn).toContain(`Transition ${i}:`);
    expect(turn).toContain(`Action: ${input.action}`);
    expect(turn).not.toContain('Interaction so far');
    // Retrieved states drop their own task line; the current state keeps the environment's format.
    expect(turn.match(/Instruction: /g)).toHaveLength(1);
  });

  it('a conversation restarted mid-episode restates the recent history', () => {
    const { task, steps } = shopEpisode();
    const history = steps.slice(0, 2);
    const turn = firstStepTurn({ task, history, observation: (steps[2] as HistoryStep).observation, action: (steps[2] as HistoryStep).action, demos: [] }, { ...small, historyWindow: 1 });
    expect(turn).toContain('Interaction so far:\n(1 earlier step not shown)\nStep 2 state:');
    expect(turn).toContain(`Step 2 action: ${(steps[1] as HistoryStep).action}`);
    expect(turn).not.toContain('Real transitions');
  });

  it('follow-up turn: only the new transitions and the action (inline snapshot)', () => {
    const demo: Demonstration = { state: 'Page: search', action: 'search[red shoe]', nextState: 'Page: results', nextActions: ['click[B01]'], reward: 0, done: false, valid: true };
    const input: StepTurnInput = { task: shopEpisode().task, history: [], observation: { text: 'Page: results', actions: ['click[B01]'] }, action: 'click[B01]', demos: [demo] };
    expect(followUpStepTurn(input, small, true)).toMatchInlineSnapshot(`
      "Real transitions retrieved for similar states and actions:

      Transition 1:
      State: Page: search
      Action: search[red shoe]
      Outcome: valid true, reward 0, done false
      Next state: Page: results
      Next admissible actions: click[B01]

      Current state: the state in your previous reply.

      Action: click[B01]

      Predict the outcome of this action. Reply with the JSON object only."
    `);
    expect(followUpStepTurn(input, small, false)).toContain('Current state:\nPage: results\nAdmissible actions: click[B01]');
  });

  it('keeps the top-k transitions by score and clips long texts', () => {
    const d = (score: number | undefined, action: string): Demonstration => ({ state: 's', action, nextState: 'n', nextActions: [], reward: 0, done: false, valid: true, ...(score === undefined ? {} : { score }) });
    expect(selectDemos([d(0.1, 'a'), d(0.9, 'b'), d(undefined, 'c'), d(0.5, 'd')], 3).map((x) => x.action)).toEqual(['b', 'd', 'a']);
    expect(demosBlock([], small)).toBe('');
    expect(demosBlock([d(1, 'a')], { ...small, topK: 0 })).toBe('');
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(listActions(['a', 'b', 'c', 'd', 'e'], 4)).toBe('a | b | … (1 more) … | d | e');
    expect(listActions(['a', 'b'], 4)).toBe('a | b');
    expect(listActions([], 4)).toBe('(none)');
    expect(clip('abc', 4)).toBe('abc');
    expect(historyBlock([], small)).toBe('');
    // The task line is found by the episode's instruction, or by the label its own task line has.
    const line = taskLine('Intro\nGoal: fetch a box.\nYou are home.', 'fetch a box.');
    expect(line).toEqual({ instruction: 'fetch a box.', label: 'Goal: ' });
    expect(compactState('Goal: fetch a box.\nYou are home.', line)).toBe('You are home.');
    expect(compactState('Goal: fetch a ball.\nPage: search\nActions: find[x]', line)).toBe('Page: search');
    expect(compactState('fetch a box.\nYou are home.', taskLine('fetch a box.\nYou are home.', 'fetch a box.'))).toBe('You are home.');
    expect(compactState('Goal: fetch a ball.\nYou are home.')).toBe('Goal: fetch a ball.\nYou are home.');
    expect(compactState('Page: search', line)).toBe('Page: search');
    expect(compactState('Page: search\nGoal: fetch a ball.', line)).toBe('Page: search\nGoal: fetch a ball.');
    expect(taskLine('Page: search', 'fetch a box.')).toEqual({ instruction: 'fetch a box.', label: '' });
    expect(sharedLabel(['Goal: fetch a box\nx', 'Goal: fetch a ball\ny'])).toBe('Goal: ');
    expect(sharedLabel(['Goal: fetch a box'])).toBe('');
    expect(sharedLabel(['Goal: a', 'Aim: b'])).toBe('');
    // Transitions already shown in the conversation are not repeated.
    const a = d(0.9, 'a');
    const b = d(0.8, 'b');
    const both = demosBlock([a, b], small, new Set([demoKey(a)]));
    expect(both).toContain('(1 more shown earlier)');
    expect(both).toContain('Action: b');
    expect(both).not.toContain('Action: a');
    expect(demosBlock([a], small, new Set([demoKey(a)]))).toBe('The real transitions retrieved for this step were shown earlier.');
  });

  it('correction and reset turns', () => {
    expect(correctionTurn('the reply is empty')).toMatch(/^Your reply could not be used: the reply is empty\nReply again/);
    const { task, demos } = shopEpisode();
    const reset = resetTurn(task, demos, small);
    expect(reset).toContain('Initial states of similar real episodes:');
    expect(reset).toContain('Write its initial state');
    // The examples' task line (the label their first lines share) is left out; the task is stated once.
    expect(reset.split(task.instruction)).toHaveLength(2);
  });

  it('prompts take what the agent sees of a task: its instruction, never its goal', () => {
    const { task, steps, demos } = shopEpisode();
    const view = agentView(task);
    const step = steps[0] as HistoryStep;
    const input: StepTurnInput = { task: view, history: [], observation: step.observation, action: step.action, demos };
    // The same prompts from the agent's view as from the whole task: nothing of the goal is read.
    expect(firstStepTurn(input, small)).toBe(firstStepTurn({ ...input, task }, small));
    expect(resetTurn(view, demos, small)).toBe(resetTurn(task, demos, small));
    const secret = { ...task, goal: { targetId: 'ZQXMARKER123' } };
    for (const text of [firstStepTurn({ ...input, task: secret }, small), followUpStepTurn({ ...input, task: secret }, small, false), resetTurn(secret, demos, small)]) {
      expect(text).not.toContain('ZQXMARKER123');
    }
  });
});
