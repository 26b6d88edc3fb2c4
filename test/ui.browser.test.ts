/**
 * The play panel in a real Chromium DOM (vitest browser mode): lists the environments, plays a
 * shop task to success by clicking the expert's actions, shows invalid actions and keeps going,
 * and renders untrusted text as text.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { userEvent } from 'vitest/browser';
import type { EnvName, Observation, StepResult, Task } from '../src/core/types.ts';
import { ENVIRONMENTS, getEnvSpec } from '../src/envs/registry.ts';
import { mountPlayPanel, type PlayPanelHandle } from '../src/ui/play.ts';

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

function byTestId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = host.querySelector<T>(`[data-testid="${id}"]`);
  if (!node) throw new Error(`no element with data-testid=${id}`);
  return node;
}

function actionButton(action: string): HTMLButtonElement | undefined {
  return [...byTestId('actions').querySelectorAll('button')].find((b) => b.dataset['action'] === action);
}

async function typeAction(action: string): Promise<void> {
  const input = byTestId<HTMLInputElement>('action-input');
  await userEvent.fill(input, action);
  await userEvent.keyboard('{Enter}');
}

function mount(initialEnv: EnvName = 'shop'): PlayPanelHandle {
  panel = mountPlayPanel(host, { environments: Object.values(ENVIRONMENTS), initialEnv, autoStart: false });
  return panel;
}

describe('play panel (browser)', () => {
  it('lists both environments with their descriptions', () => {
    mount();
    const picker = byTestId('env-picker');
    for (const spec of Object.values(ENVIRONMENTS)) {
      const radio = picker.querySelector<HTMLInputElement>(`input[value="${spec.name}"]`);
      expect(radio, spec.name).not.toBeNull();
      expect(picker.textContent).toContain(spec.description);
    }
    expect(picker.querySelectorAll('input[type="radio"]')).toHaveLength(2);
    expect(picker.querySelector<HTMLInputElement>('input[value="shop"]')?.checked).toBe(true);
  });

  it('plays a shop task to success by clicking the expert actions', async () => {
    mount('shop');
    const spec = getEnvSpec('shop');
    const index = 3;
    const task = spec.tasks({ split: 'train', count: 200, seed: 0 })[index] as Task;

    await userEvent.selectOptions(byTestId<HTMLSelectElement>('split'), 'train');
    await userEvent.fill(byTestId<HTMLInputElement>('task-index'), String(index));
    await userEvent.click(byTestId('new-task'));

    expect(byTestId('instruction').textContent).toBe(task.instruction);
    expect(byTestId('status').textContent).toMatch(/in progress/i);
    const expert = spec.create();
    let observation: Observation = expert.reset(task);
    expect(byTestId('observation').textContent).toBe(observation.text);

    let clicked = 0;
    let last: StepResult | null = null;
    for (let t = 0; t < spec.maxSteps && !last?.done; t++) {
      const action = expert.expertAction();
      const button = actionButton(action);
      if (button) {
        await userEvent.click(button);
        clicked++;
      } else {
        // An action outside the listed ones (e.g. a free-text search) is typed.
        await typeAction(action);
      }
      last = expert.step(action);
      observation = last.observation;
      expect(byTestId('observation').textContent).toBe(observation.text);
      expect(byTestId('steps').textContent).toContain(`Step ${t + 1} /`);
    }
    expect(last?.done).toBe(true);
    expect(last?.info.success).toBe(true);
    expect(clicked).toBeGreaterThan(0);

    const status = byTestId('status');
    expect(status.getAttribute('aria-live')).toBe('polite');
    expect(status.textContent).toBe('Episode finished: success, reward 1');
    expect(byTestId('reward').textContent).toContain('Total 1');
    expect(panel?.state()).toMatchObject({ done: true, success: true, totalReward: 1 });
    for (const button of byTestId('actions').querySelectorAll('button')) expect(button.disabled).toBe(true);
    expect(byTestId<HTMLButtonElement>('act').disabled).toBe(true);
    expect(byTestId<HTMLInputElement>('action-input').disabled).toBe(true);
    expect(byTestId('history').querySelectorAll('li')).toHaveLength(panel?.state().steps ?? -1);
  });

  it('shows an invalid typed action with its explanation and continues the episode', async () => {
    mount('shop');
    panel?.newTask({ split: 'train', index: 0 });
    const before = byTestId('observation').textContent;
    await typeAction('fly to the moon');

    const items = byTestId('history').querySelectorAll('li');
    expect(items).toHaveLength(1);
    const item = items[0] as HTMLLIElement;
    expect(item.dataset['valid']).toBe('false');
    expect(item.textContent).toContain('fly to the moon');
    expect(item.textContent).toContain('invalid');
    const message = byTestId('message');
    expect(message.hidden).toBe(false);
    expect(message.textContent).toContain('Invalid action');
    expect(message.textContent).toContain('fly to the moon');
    const state = panel?.state();
    expect(state?.done).toBe(false);
    expect(state?.steps).toBe(1);
    expect(state?.history[0]?.valid).toBe(false);
    // The explanation from the environment is shown when it gives one.
    if (state?.history[0]?.message) expect(message.textContent).toContain(state.history[0].message);
    expect(byTestId('status').textContent).toMatch(/in progress/i);
    expect(byTestId('observation').textContent?.length).toBeGreaterThan(0);
    expect(before?.length).toBeGreaterThan(0);
    const buttons = [...byTestId('actions').querySelectorAll('button')];
    expect(buttons.length).toBeGreaterThan(0);
    for (const button of buttons) expect(button.disabled).toBe(false);
    expect(byTestId<HTMLButtonElement>('act').disabled).toBe(false);
  });

  it('renders markup in typed actions as text', async () => {
    mount('shop');
    panel?.newTask({ split: 'train', index: 0 });
    const evil = '<img src=x onerror="window.__pwned=1"><b>bold</b>';
    await typeAction(evil);
    expect(document.querySelector('img')).toBeNull();
    expect(host.querySelector('b')).toBeNull();
    expect(byTestId('history').textContent).toContain(evil);
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it('switches to household and starts a task there', async () => {
    mount('shop');
    panel?.newTask({ split: 'test', index: 1 });
    await userEvent.click(byTestId('env-picker').querySelector('input[value="household"]') as HTMLInputElement);
    const task = getEnvSpec('household').tasks({ split: 'test', count: 200, seed: 0 })[1] as Task;
    expect(panel?.state().env).toBe('household');
    expect(byTestId('instruction').textContent).toBe(task.instruction);
    expect(byTestId('steps').textContent).toBe(`Step 0 / ${getEnvSpec('household').maxSteps}`);
    expect(byTestId('actions').querySelectorAll('button').length).toBeGreaterThan(0);
  });

  it('rejects a bad task number without starting', async () => {
    mount('shop');
    await userEvent.fill(byTestId<HTMLInputElement>('task-index'), '9999');
    await userEvent.click(byTestId('new-task'));
    expect(panel?.state().task).toBeNull();
    expect(byTestId('message').textContent).toMatch(/Task # must be/);
    await userEvent.fill(byTestId<HTMLInputElement>('task-index'), '');
    await userEvent.click(byTestId('new-task'));
    expect(panel?.state().task).not.toBeNull();
    expect(byTestId('message').hidden).toBe(true);
  });
});
