/**
 * The play panel against a small fake environment (no dependency on the real environments):
 * text-only rendering of untrusted strings, failure at the step limit, environment errors,
 * task choice, and the typed-action form.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import type { EnvName, Observation, RealEnvironment, StepResult, Task } from '../src/core/types.ts';
import type { EnvSpec } from '../src/envs/spec.ts';
import { MAX_ACTION_LENGTH, mountPlayPanel, type PlayPanelHandle, type PlayPanelOptions } from '../src/ui/play.ts';

const EVIL = '<img src=x onerror="window.__pwned=1">';

/**
 * A counter world: reach the goal count with `inc`, then `finish`. `dec` below zero is invalid,
 * `boom` makes the environment throw, and `label` is shown verbatim in texts and action labels.
 */
function counterSpec(label = 'counter', maxSteps = 4, name: EnvName = 'household'): EnvSpec {
  return {
    name,
    description: `A fake counter ${label}`,
    maxSteps,
    create(): RealEnvironment {
      let count = 0;
      let goal = 0;
      let steps = 0;
      const obs = (): Observation => ({ text: `count = ${count}\n${label}`, actions: ['inc', 'dec', 'finish', `say[${label}]`] });
      return {
        name,
        maxSteps,
        reset(task: Task): Observation {
          count = 0;
          steps = 0;
          goal = typeof task.goal === 'number' ? task.goal : 1;
          return obs();
        },
        step(action: string): StepResult {
          if (action === 'boom') throw new Error(`kaboom ${label}`);
          steps++;
          let valid = true;
          let message: string | undefined;
          let done = false;
          let success = false;
          if (action === 'inc') count++;
          else if (action === 'dec') {
            if (count === 0) {
              valid = false;
              message = `cannot go below zero ${label}`;
            } else count--;
          } else if (action === 'finish') {
            done = true;
            success = count === goal;
            message = success ? 'goal reached' : `wrong count ${label}`;
          } else if (!action.startsWith('say[')) {
            valid = false;
            message = `unknown action ${label}`;
          }
          if (!done && steps >= maxSteps) {
            done = true;
            message = 'step limit reached';
          }
          return { observation: obs(), reward: success ? 1 : 0, done, info: { valid, success, message } };
        },
        expertAction: () => (count < goal ? 'inc' : 'finish'),
      };
    },
    tasks: ({ split, count }) =>
      Array.from({ length: count }, (_, i) => ({
        id: `${name}-counter-${split}-${i}`,
        env: name,
        instruction: `Count to ${i % 3} ${label}`,
        goal: i % 3,
        split,
        origin: 'seed' as const,
      })),
    validateTask: () => ({ ok: true }),
  };
}

let host: HTMLDivElement;
let panel: PlayPanelHandle | null = null;

beforeEach(() => {
  host = document.createElement('div');
  document.body.appendChild(host);
});

afterEach(() => {
  panel?.destroy();
  panel = null;
  host.remove();
});

function mount(options: Partial<PlayPanelOptions> = {}): PlayPanelHandle {
  panel = mountPlayPanel(host, { environments: [counterSpec()], taskCount: 10, ...options });
  return panel;
}

function byTestId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = host.querySelector<T>(`[data-testid="${id}"]`);
  if (!node) throw new Error(`no element with data-testid=${id}`);
  return node;
}

function actionButton(action: string): HTMLButtonElement {
  const button = [...byTestId('actions').querySelectorAll('button')].find((b) => b.dataset['action'] === action);
  if (!button) throw new Error(`no button for ${action}`);
  return button;
}

describe('play panel with a fake environment', () => {
  it('renders markup in descriptions, instructions, observations, actions and messages as text', async () => {
    mount({ environments: [counterSpec(EVIL)] });
    expect(byTestId('env-picker').textContent).toContain(`A fake counter ${EVIL}`);
    expect(byTestId('instruction').textContent).toContain(EVIL);
    expect(byTestId('observation').textContent).toBe(`count = 0\n${EVIL}`);
    expect(actionButton(`say[${EVIL}]`).textContent).toBe(`say[${EVIL}]`);
    await userEvent.click(actionButton('dec'));
    expect(byTestId('message').textContent).toContain(`cannot go below zero ${EVIL}`);
    expect(byTestId('history').textContent).toContain(`cannot go below zero ${EVIL}`);
    await userEvent.click(actionButton(`say[${EVIL}]`));
    panel?.act('boom');
    expect(byTestId('message').textContent).toContain(`kaboom ${EVIL}`);
    expect(document.querySelector('img')).toBeNull();
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it('starts the task chosen by split and number, and a random one with the random source', () => {
    mount({ random: () => 0.55, autoStart: false });
    expect(panel?.state().task).toBeNull();
    expect(byTestId('status').textContent).toBe('No episode running.');
    expect(byTestId<HTMLButtonElement>('act').disabled).toBe(true);
    panel?.newTask({ split: 'test', index: 2 });
    expect(panel?.state()).toMatchObject({ split: 'test', taskIndex: 2, steps: 0, done: false });
    expect(byTestId('task-label').textContent).toContain('counter-test-2');
    expect(byTestId<HTMLSelectElement>('split').value).toBe('test');
    expect(byTestId<HTMLInputElement>('task-index').value).toBe('2');
    panel?.newTask({ index: 'random' });
    expect(panel?.state().taskIndex).toBe(5);
    expect(byTestId<HTMLInputElement>('task-index').value).toBe('');
  });

  it('plays with the hint to success, then disables the actions', async () => {
    mount();
    panel?.newTask({ split: 'train', index: 2 });
    for (let i = 0; i < 3; i++) {
      await userEvent.click(byTestId('hint'));
      const hinted = byTestId('actions').querySelector<HTMLButtonElement>('button.hinted');
      expect(hinted?.dataset['action']).toBe(byTestId('hint-text').textContent?.replace("Expert's next action: ", ''));
      await userEvent.click(hinted as HTMLButtonElement);
    }
    expect(byTestId('status').textContent).toBe('Episode finished: success, reward 1');
    expect(byTestId('status').dataset['state']).toBe('success');
    expect(byTestId('reward').textContent).toBe('Last reward 1 · Total 1');
    expect(byTestId('steps').textContent).toBe('Step 3 / 4');
    for (const b of byTestId('actions').querySelectorAll('button')) expect(b.disabled).toBe(true);
    expect(byTestId<HTMLButtonElement>('hint').disabled).toBe(true);
    expect(panel?.act('inc')).toBeNull();
    expect(panel?.state().steps).toBe(3);
    // A new task starts over.
    await userEvent.click(byTestId('new-task'));
    expect(panel?.state()).toMatchObject({ steps: 0, done: false, totalReward: 0, history: [] });
    expect(byTestId('history').querySelectorAll('li')).toHaveLength(0);
    expect(actionButton('inc').disabled).toBe(false);
  });

  it('ends in failure at the step limit', async () => {
    mount();
    panel?.newTask({ index: 1 });
    for (let i = 0; i < 4; i++) await userEvent.click(actionButton('dec'));
    expect(byTestId('status').textContent).toBe('Episode finished: failure, reward 0');
    expect(byTestId('status').dataset['state']).toBe('failure');
    expect(byTestId('history').querySelectorAll('li[data-valid="false"]')).toHaveLength(4);
    expect(byTestId<HTMLInputElement>('action-input').disabled).toBe(true);
  });

  it('acts on typed input with Enter and with the Act button, ignoring blank input', async () => {
    mount();
    const input = byTestId<HTMLInputElement>('action-input');
    await userEvent.fill(input, '   ');
    await userEvent.keyboard('{Enter}');
    expect(panel?.state().steps).toBe(0);
    await userEvent.fill(input, 'inc');
    await userEvent.keyboard('{Enter}');
    expect(panel?.state().history).toEqual([{ action: 'inc', valid: true, reward: 0 }]);
    expect(input.value).toBe('');
    expect(document.activeElement).toBe(input);
    await userEvent.fill(input, 'jump');
    await userEvent.click(byTestId('act'));
    expect(panel?.state().history[1]).toMatchObject({ action: 'jump', valid: false });
    expect(byTestId('message').textContent).toContain('unknown action');
    expect(byTestId('message').textContent).toContain('The episode continues');
    // The environment's message has no full stop of its own: the panel adds one before the next sentence.
    expect(byTestId('message').textContent).toMatch(/unknown action [^.]*\. The episode continues\.$/);
  });

  it('caps typed actions: the input takes at most MAX_ACTION_LENGTH characters and act refuses longer text', async () => {
    const handle = mount();
    const input = byTestId<HTMLInputElement>('action-input');
    expect(input.maxLength).toBe(MAX_ACTION_LENGTH);
    await userEvent.click(input);
    await userEvent.keyboard('x'.repeat(MAX_ACTION_LENGTH + 20));
    expect(input.value.length).toBe(MAX_ACTION_LENGTH);
    const started = performance.now();
    expect(handle.act('y'.repeat(1_000_000))).toBeNull();
    expect(performance.now() - started).toBeLessThan(200);
    expect(handle.state().steps).toBe(0);
    expect(byTestId('message').textContent).toContain(`actions are at most ${MAX_ACTION_LENGTH}`);
  });

  it('keeps the picker on the running episode when switching environments cannot start a task', async () => {
    mount({ environments: [counterSpec('one', 4, 'shop'), counterSpec('two', 4, 'household')], initialEnv: 'shop' });
    await userEvent.click(actionButton('inc'));
    await userEvent.fill(byTestId<HTMLInputElement>('task-index'), 'abc');
    await userEvent.click(byTestId('env-option-household'));
    expect(byTestId('message').textContent).toMatch(/Task # must be a whole number/);
    // The shop episode goes on, and the page says so everywhere.
    expect(panel?.state()).toMatchObject({ env: 'shop', steps: 1 });
    expect(byTestId<HTMLInputElement>('env-option-shop').checked).toBe(true);
    expect(byTestId<HTMLInputElement>('env-option-household').checked).toBe(false);
    // With a good task number, the switch works.
    await userEvent.fill(byTestId<HTMLInputElement>('task-index'), '1');
    await userEvent.click(byTestId('env-option-household'));
    expect(panel?.state()).toMatchObject({ env: 'household', steps: 0, taskIndex: 1 });
    expect(byTestId('task-label').textContent).toContain('household-counter-train-1');
  });

  it('moves focus to the new action buttons after clicking one', async () => {
    mount();
    await userEvent.click(actionButton('inc'));
    expect(document.activeElement).toBe(actionButton('inc'));
  });
});
