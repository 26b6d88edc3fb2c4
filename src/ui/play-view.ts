/**
 * The play panel's elements and how an episode is drawn into them. Everything the environment or
 * the task says is rendered as text only. The behaviour (what a click does) lives in ./play.ts.
 */
import type { EnvName, Observation, RealEnvironment, Task } from '../core/types.ts';
import type { EnvSpec } from '../envs/spec.ts';
import type { HistoryEntry } from './play.ts';
import { el, formatReward, replaceChildren, setText, uniqueId } from './dom.ts';

/** The longest action the panel accepts (typed or passed to `act`): longer text is refused, not stepped. */
export const MAX_ACTION_LENGTH = 500;

/** The episode being played. */
export interface Episode {
  spec: EnvSpec;
  env: RealEnvironment;
  task: Task;
  taskIndex: number;
  observation: Observation;
  steps: number;
  lastReward: number | null;
  totalReward: number;
  done: boolean;
  success: boolean;
  history: HistoryEntry[];
}

/** The panel's elements that change or are read after mounting. */
export interface PlayView {
  element: HTMLElement;
  envInputs: Map<EnvName, HTMLInputElement>;
  controls: HTMLFormElement;
  splitSelect: HTMLSelectElement;
  indexInput: HTMLInputElement;
  newTaskButton: HTMLButtonElement;
  taskLabel: HTMLElement;
  instruction: HTMLElement;
  stepsView: HTMLElement;
  rewardView: HTMLElement;
  status: HTMLElement;
  message: HTMLElement;
  observationView: HTMLElement;
  actionsView: HTMLElement;
  actForm: HTMLFormElement;
  actionInput: HTMLInputElement;
  actButton: HTMLButtonElement;
  hintButton: HTMLButtonElement;
  hintView: HTMLElement;
  historyView: HTMLElement;
  historyEmpty: HTMLElement;
}

/** The environment radio buttons, `current` checked. */
function buildEnvPicker(specs: readonly EnvSpec[], current: EnvSpec): { picker: HTMLElement; envInputs: Map<EnvName, HTMLInputElement> } {
  const radioName = uniqueId('env');
  const envInputs = new Map<EnvName, HTMLInputElement>();
  const picker = el('fieldset', { class: 'env-picker', 'data-testid': 'env-picker' }, [el('legend', {}, ['Environment'])]);
  for (const spec of specs) {
    const id = uniqueId(`env-${spec.name}`);
    const input = el('input', { type: 'radio', name: radioName, id, value: spec.name, 'data-testid': `env-option-${spec.name}`, checked: spec === current });
    envInputs.set(spec.name, input);
    picker.appendChild(
      el('label', { class: 'env-option', for: id }, [
        input,
        el('span', { class: 'env-text' }, [el('span', { class: 'env-name' }, [spec.name]), el('span', { class: 'env-desc' }, [spec.description])]),
      ]),
    );
  }
  return { picker, envInputs };
}

/** The split menu, the task number and "New task". */
function buildTaskControls(taskCount: number) {
  const splitId = uniqueId('split');
  const splitSelect = el('select', { id: splitId, 'data-testid': 'split' }, [el('option', { value: 'train' }, ['train']), el('option', { value: 'test' }, ['test'])]);
  const indexId = uniqueId('task-index');
  const indexHelpId = uniqueId('task-index-help');
  const indexInput = el('input', {
    id: indexId,
    type: 'text',
    inputmode: 'numeric',
    autocomplete: 'off',
    placeholder: 'random',
    size: 7,
    'aria-describedby': indexHelpId,
    'data-testid': 'task-index',
  });
  const newTaskButton = el('button', { type: 'button', class: 'primary', 'data-testid': 'new-task' }, ['New task']);
  const controls = el('form', { class: 'task-controls', 'data-testid': 'task-form' }, [
    el('div', { class: 'field field-split' }, [el('label', { for: splitId }, ['Split']), splitSelect]),
    el('div', { class: 'field field-index' }, [
      el('label', { for: indexId }, ['Task #']),
      indexInput,
      el('span', { class: 'help', id: indexHelpId }, [`0–${taskCount - 1}, blank for random`]),
    ]),
    newTaskButton,
  ]);
  return { controls, splitSelect, indexInput, newTaskButton };
}

/** The typed-action form and the hint button. */
function buildActForm() {
  const actionInputId = uniqueId('action-input');
  const actionInput = el('input', {
    id: actionInputId,
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'an action, then Enter',
    // A megabyte of typed text once froze the page for seconds in the environment's parser.
    maxlength: String(MAX_ACTION_LENGTH),
    'data-testid': 'action-input',
  });
  const actButton = el('button', { type: 'submit', class: 'primary', 'data-testid': 'act' }, ['Act']);
  const hintButton = el('button', { type: 'button', 'data-testid': 'hint' }, ["Hint: expert's next action"]);
  const actForm = el('form', { class: 'act-form', 'data-testid': 'act-form' }, [
    el('label', { for: actionInputId }, ['Type any action']),
    el('div', { class: 'act-row' }, [actionInput, actButton, hintButton]),
  ]);
  return { actForm, actionInput, actButton, hintButton };
}

/**
 * Builds the panel's elements (not yet attached). Test hooks: `data-testid` on the controls and
 * `data-action` on each admissible-action button (see {@link renderEpisode}).
 */
export function buildPlayView(specs: readonly EnvSpec[], current: EnvSpec, taskCount: number): PlayView {
  const { picker, envInputs } = buildEnvPicker(specs, current);
  const { controls, splitSelect, indexInput, newTaskButton } = buildTaskControls(taskCount);
  const taskLabel = el('span', { class: 'task-label', 'data-testid': 'task-label' }, ['No task yet']);
  const instruction = el('p', { class: 'instruction', 'data-testid': 'instruction' });
  const stepsView = el('span', { class: 'stat', 'data-testid': 'steps' });
  const rewardView = el('span', { class: 'stat', 'data-testid': 'reward' });
  const status = el('p', { class: 'status', role: 'status', 'aria-live': 'polite', 'data-testid': 'status' });
  const message = el('p', { class: 'message', 'aria-live': 'polite', 'data-testid': 'message', hidden: true });
  const observationHeadingId = uniqueId('obs-heading');
  // A named, focusable region (it scrolls): a plain pre may not carry a name.
  const observationView = el('pre', { class: 'observation', 'data-testid': 'observation', role: 'region', 'aria-labelledby': observationHeadingId, tabindex: 0 });
  const actionsHeadingId = uniqueId('actions-heading');
  const actionsView = el('div', { class: 'actions', role: 'group', 'aria-labelledby': actionsHeadingId, 'data-testid': 'actions' });
  const { actForm, actionInput, actButton, hintButton } = buildActForm();
  const hintView = el('p', { class: 'hint', 'aria-live': 'polite', 'data-testid': 'hint-text', hidden: true });
  const historyHeadingId = uniqueId('history-heading');
  const historyView = el('ol', { class: 'history', 'aria-labelledby': historyHeadingId, 'data-testid': 'history' });
  const historyEmpty = el('p', { class: 'empty' }, ['No actions yet.']);

  const element = el('section', { class: 'play-panel', 'data-testid': 'play-panel', 'aria-label': 'Play an environment' }, [
    el('div', { class: 'setup card' }, [picker, controls]),
    el('div', { class: 'episode' }, [
      el('div', { class: 'main-col' }, [
        el('div', { class: 'card task-card' }, [el('div', { class: 'task-head' }, [el('h2', {}, ['Task']), taskLabel]), instruction, el('div', { class: 'stats' }, [stepsView, rewardView]), status, message]),
        el('div', { class: 'card' }, [el('h3', { id: observationHeadingId }, ['Observation']), observationView]),
        el('div', { class: 'card' }, [el('h3', { id: actionsHeadingId }, ['Admissible actions']), actionsView, actForm, hintView]),
      ]),
      el('div', { class: 'side-col' }, [el('div', { class: 'card' }, [el('h3', { id: historyHeadingId }, ['History']), historyEmpty, historyView])]),
    ]),
  ]);
  return {
    element, envInputs, controls, splitSelect, indexInput, newTaskButton, taskLabel, instruction, stepsView, rewardView, status, message,
    observationView, actionsView, actForm, actionInput, actButton, hintButton, hintView, historyView, historyEmpty,
  };
}

/** Shows a message of the given kind under the task, or hides it (null or empty). */
export function showMessage(view: PlayView, text: string | null, kind: 'info' | 'invalid' | 'error' = 'info'): void {
  const { message } = view;
  if (text === null || text === '') {
    message.hidden = true;
    setText(message, '');
    message.removeAttribute('data-kind');
    return;
  }
  message.hidden = false;
  message.setAttribute('data-kind', kind);
  setText(message, text);
}

/** Hides the expert's hint and unmarks its button. */
export function clearHint(view: PlayView): void {
  view.hintView.hidden = true;
  setText(view.hintView, '');
  for (const button of view.actionsView.querySelectorAll('button.hinted')) button.classList.remove('hinted');
}

/** Shows the expert's next action and marks its button. */
export function showHintText(view: PlayView, action: string): void {
  clearHint(view);
  view.hintView.hidden = false;
  setText(view.hintView, `Expert's next action: ${action}`);
  for (const button of view.actionsView.querySelectorAll('button')) {
    if (button.dataset['action'] === action) button.classList.add('hinted');
  }
}

function setControlsEnabled(view: PlayView, enabled: boolean): void {
  view.actionInput.disabled = !enabled;
  view.actButton.disabled = !enabled;
  view.hintButton.disabled = !enabled;
}

/** Draws the panel with no episode running. */
function renderIdle(view: PlayView, maxSteps: number): void {
  setText(view.taskLabel, 'No task yet');
  setText(view.instruction, 'Press “New task” to start an episode.');
  setText(view.observationView, '');
  replaceChildren(view.actionsView, []);
  setText(view.stepsView, `Step 0 / ${maxSteps}`);
  setText(view.rewardView, 'Last reward – · Total 0');
  setText(view.status, 'No episode running.');
  view.status.setAttribute('data-state', 'idle');
  replaceChildren(view.historyView, []);
  view.historyEmpty.hidden = false;
  setControlsEnabled(view, false);
}

function historyItem(entry: HistoryEntry, i: number): HTMLElement {
  return el('li', { class: entry.valid ? 'valid' : 'invalid', 'data-valid': String(entry.valid) }, [
    el('span', { class: 'h-step' }, [`${i + 1}.`]),
    el('span', { class: 'h-action' }, [entry.action]),
    el('span', { class: 'h-valid' }, [entry.valid ? 'valid' : 'invalid']),
    el('span', { class: 'h-reward' }, [`r = ${formatReward(entry.reward)}`]),
    entry.message ? el('span', { class: 'h-message' }, [entry.message]) : null,
  ]);
}

/** Draws `ep` (or the idle panel when null); each admissible-action button calls `onAct`. */
export function renderEpisode(view: PlayView, ep: Episode | null, maxSteps: number, onAct: (action: string) => void): void {
  if (!ep) {
    renderIdle(view, maxSteps);
    return;
  }
  setText(view.taskLabel, `${ep.spec.name} · ${ep.task.split} #${ep.taskIndex} (${ep.task.id})`);
  setText(view.instruction, ep.task.instruction);
  setText(view.observationView, ep.observation.text);
  replaceChildren(
    view.actionsView,
    ep.observation.actions.map((action) => {
      const button = el('button', { type: 'button', class: 'action', 'data-action': action, disabled: ep.done }, [action]);
      button.addEventListener('click', () => onAct(action));
      return button;
    }),
  );
  if (ep.done) view.actionsView.appendChild(el('p', { class: 'empty' }, ['Episode over: press “New task” to play again.']));
  else if (ep.observation.actions.length === 0) view.actionsView.appendChild(el('p', { class: 'empty' }, ['No actions listed: type one below.']));
  setText(view.stepsView, `Step ${ep.steps} / ${maxSteps}`);
  setText(view.rewardView, `Last reward ${ep.lastReward === null ? '–' : formatReward(ep.lastReward)} · Total ${formatReward(ep.totalReward)}`);
  if (ep.done) {
    const outcome = ep.success ? 'success' : 'failure';
    setText(view.status, `Episode finished: ${outcome}, reward ${formatReward(ep.totalReward)}`);
    view.status.setAttribute('data-state', outcome);
  } else {
    setText(view.status, `In progress: ${maxSteps - ep.steps} step${maxSteps - ep.steps === 1 ? '' : 's'} left.`);
    view.status.setAttribute('data-state', 'running');
  }
  replaceChildren(view.historyView, ep.history.map(historyItem));
  view.historyEmpty.hidden = ep.history.length > 0;
  setControlsEnabled(view, !ep.done);
}
