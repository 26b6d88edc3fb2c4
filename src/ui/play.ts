/**
 * The "play" panel: a person acts as the agent in one of the real, rule-based environments.
 * Pick an environment, a split and a task, then act with the admissible-action buttons or by
 * typing any action. Everything the environment or the task says is rendered as text only.
 */
import type { EnvName, Observation, RealEnvironment, StepResult, Task } from '../core/types.ts';
import type { EnvSpec, Split } from '../envs/spec.ts';
import { el, formatReward, replaceChildren, setText, uniqueId } from './dom.ts';

/** Longest action the panel accepts (typed or passed to `act`): longer text is refused, not stepped. */
export const MAX_ACTION_LENGTH = 500;

/** Options for {@link mountPlayPanel}. */
export interface PlayPanelOptions {
  /** The environments to offer, in menu order (normally `Object.values(ENVIRONMENTS)`). */
  environments: readonly EnvSpec[];
  /** The environment selected at first; defaults to the first of `environments`. */
  initialEnv?: EnvName;
  /** How many seed tasks each split offers (task numbers 0..taskCount-1). Default 200. */
  taskCount?: number;
  /** Seed of the task sampler. Default 0. */
  taskSeed?: number;
  /** Start a task as soon as the panel is mounted. Default true. */
  autoStart?: boolean;
  /** Uniform [0, 1) source for "random" task picks. Default `Math.random`. */
  random?: () => number;
}

/** One acted step, as listed in the history. */
export interface HistoryEntry {
  action: string;
  valid: boolean;
  reward: number;
  /** The environment's explanation (why an action was invalid, or why the episode ended). */
  message?: string;
}

/** A snapshot of the panel's episode. */
export interface PlayState {
  env: EnvName;
  split: Split;
  /** The current task, or null before the first "New task". */
  task: Task | null;
  /** The task's number within its split, or null before the first task. */
  taskIndex: number | null;
  observation: Observation | null;
  /** Steps taken in this episode (valid and invalid). */
  steps: number;
  maxSteps: number;
  /** Reward of the last step, or null before the first step. */
  lastReward: number | null;
  totalReward: number;
  done: boolean;
  success: boolean;
  history: readonly HistoryEntry[];
}

/** What {@link newTask} accepts: a split and a task number, or `'random'`. */
export interface NewTaskOptions {
  split?: Split;
  index?: number | 'random';
}

/** Handle returned by {@link mountPlayPanel}. */
export interface PlayPanelHandle {
  /** The panel's root element (already attached to the mount point). */
  readonly element: HTMLElement;
  /** Selects an environment and starts a task in it (same split and task number if possible). */
  selectEnv(name: EnvName): void;
  /** Starts a task; without options, uses the split and task number chosen in the form. */
  newTask(options?: NewTaskOptions): Task | null;
  /** Acts as if the action had been clicked or typed; null if no episode is running. */
  act(action: string): StepResult | null;
  /** A snapshot of the current episode. */
  state(): PlayState;
  /** Removes the panel from the page. */
  destroy(): void;
}

interface Episode {
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

/**
 * Mounts the play panel into `root` and returns a handle to drive or inspect it.
 * Test hooks: `data-testid` on the controls (`env-picker`, `split`, `task-index`, `new-task`,
 * `instruction`, `observation`, `actions`, `action-input`, `act`, `hint`, `status`, `reward`,
 * `steps`, `message`, `history`) and `data-action` on each admissible-action button.
 */
export function mountPlayPanel(root: HTMLElement, options: PlayPanelOptions): PlayPanelHandle {
  const specs = options.environments;
  const first = specs[0];
  if (!first) throw new RangeError('mountPlayPanel needs at least one environment');
  const taskCount = options.taskCount ?? 200;
  if (!(Number.isInteger(taskCount) && taskCount > 0)) throw new RangeError(`taskCount must be a positive integer, got ${taskCount}`);
  const taskSeed = options.taskSeed ?? 0;
  const random = options.random ?? Math.random;
  const initial = options.initialEnv === undefined ? first : specs.find((s) => s.name === options.initialEnv);
  if (!initial) throw new RangeError(`Unknown initial environment ${JSON.stringify(options.initialEnv)}`);

  let current: EnvSpec = initial;
  let episode: Episode | null = null;
  const taskCache = new Map<string, Task[]>();

  // ---- Environment picker -------------------------------------------------------------------
  const radioName = uniqueId('env');
  const envInputs = new Map<EnvName, HTMLInputElement>();
  const picker = el('fieldset', { class: 'env-picker', 'data-testid': 'env-picker' }, [el('legend', {}, ['Environment'])]);
  for (const spec of specs) {
    const id = uniqueId(`env-${spec.name}`);
    const input = el('input', {
      type: 'radio',
      name: radioName,
      id,
      value: spec.name,
      'data-testid': `env-option-${spec.name}`,
      checked: spec === current,
    });
    envInputs.set(spec.name, input);
    input.addEventListener('change', () => {
      if (input.checked) selectEnv(spec.name);
    });
    picker.appendChild(
      el('label', { class: 'env-option', for: id }, [
        input,
        el('span', { class: 'env-text' }, [
          el('span', { class: 'env-name' }, [spec.name]),
          el('span', { class: 'env-desc' }, [spec.description]),
        ]),
      ]),
    );
  }

  // ---- Task controls ------------------------------------------------------------------------
  const splitId = uniqueId('split');
  const splitSelect = el('select', { id: splitId, 'data-testid': 'split' }, [
    el('option', { value: 'train' }, ['train']),
    el('option', { value: 'test' }, ['test']),
  ]);
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
  controls.addEventListener('submit', (event) => {
    event.preventDefault();
    newTask();
  });
  newTaskButton.addEventListener('click', () => newTask());

  // ---- Episode view -------------------------------------------------------------------------
  const taskLabel = el('span', { class: 'task-label', 'data-testid': 'task-label' }, ['No task yet']);
  const instruction = el('p', { class: 'instruction', 'data-testid': 'instruction' });
  const stepsView = el('span', { class: 'stat', 'data-testid': 'steps' });
  const rewardView = el('span', { class: 'stat', 'data-testid': 'reward' });
  const status = el('p', { class: 'status', role: 'status', 'aria-live': 'polite', 'data-testid': 'status' });
  const message = el('p', { class: 'message', 'aria-live': 'polite', 'data-testid': 'message', hidden: true });
  const observationHeadingId = uniqueId('obs-heading');
  const observationView = el('pre', {
    class: 'observation',
    'data-testid': 'observation',
    // A named, focusable region (it scrolls): a plain pre may not carry a name.
    role: 'region',
    'aria-labelledby': observationHeadingId,
    tabindex: 0,
  });
  const actionsHeadingId = uniqueId('actions-heading');
  const actionsView = el('div', { class: 'actions', role: 'group', 'aria-labelledby': actionsHeadingId, 'data-testid': 'actions' });
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
  const hintView = el('p', { class: 'hint', 'aria-live': 'polite', 'data-testid': 'hint-text', hidden: true });
  const actForm = el('form', { class: 'act-form', 'data-testid': 'act-form' }, [
    el('label', { for: actionInputId }, ['Type any action']),
    el('div', { class: 'act-row' }, [actionInput, actButton, hintButton]),
  ]);
  actForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = actionInput.value.trim();
    if (text === '') {
      actionInput.focus();
      return;
    }
    if (act(text)) actionInput.value = '';
    actionInput.focus();
  });
  hintButton.addEventListener('click', showHint);
  const historyHeadingId = uniqueId('history-heading');
  const historyView = el('ol', { class: 'history', 'aria-labelledby': historyHeadingId, 'data-testid': 'history' });
  const historyEmpty = el('p', { class: 'empty' }, ['No actions yet.']);

  const element = el('section', { class: 'play-panel', 'data-testid': 'play-panel', 'aria-label': 'Play an environment' }, [
    el('div', { class: 'setup card' }, [picker, controls]),
    el('div', { class: 'episode' }, [
      el('div', { class: 'main-col' }, [
        el('div', { class: 'card task-card' }, [
          el('div', { class: 'task-head' }, [el('h2', {}, ['Task']), taskLabel]),
          instruction,
          el('div', { class: 'stats' }, [stepsView, rewardView]),
          status,
          message,
        ]),
        el('div', { class: 'card' }, [el('h3', { id: observationHeadingId }, ['Observation']), observationView]),
        el('div', { class: 'card' }, [el('h3', { id: actionsHeadingId }, ['Admissible actions']), actionsView, actForm, hintView]),
      ]),
      el('div', { class: 'side-col' }, [
        el('div', { class: 'card' }, [el('h3', { id: historyHeadingId }, ['History']), historyEmpty, historyView]),
      ]),
    ]),
  ]);
  root.appendChild(element);

  // ---- Behaviour ----------------------------------------------------------------------------
  function tasksFor(spec: EnvSpec, split: Split): Task[] {
    const key = `${spec.name}:${split}`;
    let tasks = taskCache.get(key);
    if (!tasks) {
      tasks = spec.tasks({ split, count: taskCount, seed: taskSeed });
      taskCache.set(key, tasks);
    }
    return tasks;
  }

  function currentSplit(): Split {
    return splitSelect.value === 'test' ? 'test' : 'train';
  }

  function showMessage(text: string | null, kind: 'info' | 'invalid' | 'error' = 'info'): void {
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

  function clearHint(): void {
    hintView.hidden = true;
    setText(hintView, '');
    for (const button of actionsView.querySelectorAll('button.hinted')) button.classList.remove('hinted');
  }

  function parseIndex(raw: string, count: number): number | 'random' | null {
    const text = raw.trim();
    if (text === '' || text.toLowerCase() === 'random') return 'random';
    if (!/^\d+$/.test(text)) return null;
    const n = Number(text);
    return n < count ? n : null;
  }

  function newTask(opts: NewTaskOptions = {}): Task | null {
    const split = opts.split ?? currentSplit();
    if (opts.split) splitSelect.value = opts.split;
    let tasks: Task[];
    try {
      tasks = tasksFor(current, split);
    } catch (error) {
      showMessage(`Could not generate ${current.name} tasks: ${errorText(error)}`, 'error');
      return null;
    }
    if (tasks.length === 0) {
      showMessage(`The ${current.name} environment has no ${split} tasks.`, 'error');
      return null;
    }
    let choice: number | 'random' | null;
    if (opts.index === undefined) {
      choice = parseIndex(indexInput.value, tasks.length);
      if (choice === null) {
        showMessage(`Task # must be a whole number from 0 to ${tasks.length - 1}, or blank for a random task.`, 'error');
        indexInput.focus();
        return null;
      }
    } else {
      choice = opts.index;
      if (choice !== 'random' && !(Number.isInteger(choice) && choice >= 0 && choice < tasks.length)) {
        throw new RangeError(`Task number must be an integer in [0, ${tasks.length - 1}], got ${choice}`);
      }
      indexInput.value = choice === 'random' ? '' : String(choice);
    }
    const index = choice === 'random' ? Math.min(tasks.length - 1, Math.floor(random() * tasks.length)) : choice;
    const task = tasks[index];
    if (!task) return null;
    try {
      const env = current.create();
      const observation = env.reset(task);
      episode = {
        spec: current,
        env,
        task,
        taskIndex: index,
        observation,
        steps: 0,
        lastReward: null,
        totalReward: 0,
        done: false,
        success: false,
        history: [],
      };
    } catch (error) {
      episode = null;
      showMessage(`Could not start task ${task.id}: ${errorText(error)}`, 'error');
      render();
      return null;
    }
    showMessage(null);
    clearHint();
    render();
    return task;
  }

  function act(action: string): StepResult | null {
    const ep = episode;
    if (!ep || ep.done) return null;
    if (action.length > MAX_ACTION_LENGTH) {
      showMessage(`That action is ${action.length} characters long; actions are at most ${MAX_ACTION_LENGTH}.`, 'invalid');
      return null;
    }
    const focusWasOnAction = document.activeElement instanceof HTMLElement && actionsView.contains(document.activeElement);
    let result: StepResult;
    try {
      result = ep.env.step(action);
    } catch (error) {
      showMessage(`The environment failed on this action: ${errorText(error)}`, 'error');
      return null;
    }
    ep.steps += 1;
    ep.lastReward = result.reward;
    ep.totalReward += result.reward;
    ep.observation = result.observation;
    const entry: HistoryEntry = { action, valid: result.info.valid, reward: result.reward };
    if (result.info.message !== undefined && result.info.message !== '') entry.message = result.info.message;
    ep.history.push(entry);
    if (result.done) {
      ep.done = true;
      ep.success = result.info.success === true;
    }
    clearHint();
    if (!result.info.valid) {
      // The environment's message may lack its full stop; the sentence after it needs one.
      const why = entry.message ? `: ${entry.message}${/[.!?…]$/.test(entry.message) ? '' : '.'}` : '.';
      showMessage(`Invalid action “${action}”${why}${result.done ? '' : ' The episode continues.'}`, 'invalid');
    } else if (result.done && entry.message) {
      showMessage(entry.message, 'info');
    } else {
      showMessage(null);
    }
    render();
    if (focusWasOnAction) {
      const next = actionsView.querySelector('button:not([disabled])');
      if (next instanceof HTMLElement) next.focus();
      else newTaskButton.focus();
    }
    return result;
  }

  function showHint(): void {
    const ep = episode;
    if (!ep || ep.done) return;
    let action: string;
    try {
      action = ep.env.expertAction();
    } catch (error) {
      showMessage(`The expert could not suggest an action: ${errorText(error)}`, 'error');
      return;
    }
    clearHint();
    hintView.hidden = false;
    setText(hintView, `Expert's next action: ${action}`);
    for (const button of actionsView.querySelectorAll('button')) {
      if (button.dataset['action'] === action) button.classList.add('hinted');
    }
  }

  function selectEnv(name: EnvName): void {
    const spec = specs.find((s) => s.name === name);
    if (!spec) throw new RangeError(`Unknown environment ${JSON.stringify(name)}`);
    const input = envInputs.get(name);
    if (input && !input.checked) input.checked = true;
    if (spec === current && episode) return;
    current = spec;
    if (newTask() === null && episode && episode.spec !== current) {
      // No task started (e.g. a bad task number), so the running episode stays: keep the picker
      // on its environment rather than showing one environment while acting in another.
      current = episode.spec;
      const running = envInputs.get(current.name);
      if (running) running.checked = true;
    }
  }

  function render(): void {
    const ep = episode;
    const maxSteps = ep ? ep.env.maxSteps : current.maxSteps;
    if (!ep) {
      setText(taskLabel, 'No task yet');
      setText(instruction, 'Press “New task” to start an episode.');
      setText(observationView, '');
      replaceChildren(actionsView, []);
      setText(stepsView, `Step 0 / ${maxSteps}`);
      setText(rewardView, 'Last reward – · Total 0');
      setText(status, 'No episode running.');
      status.setAttribute('data-state', 'idle');
      replaceChildren(historyView, []);
      historyEmpty.hidden = false;
      setControlsEnabled(false);
      return;
    }
    setText(taskLabel, `${ep.spec.name} · ${ep.task.split} #${ep.taskIndex} (${ep.task.id})`);
    setText(instruction, ep.task.instruction);
    setText(observationView, ep.observation.text);
    replaceChildren(
      actionsView,
      ep.observation.actions.map((action) => {
        const button = el('button', { type: 'button', class: 'action', 'data-action': action, disabled: ep.done }, [action]);
        button.addEventListener('click', () => act(action));
        return button;
      }),
    );
    if (ep.done) actionsView.appendChild(el('p', { class: 'empty' }, ['Episode over: press “New task” to play again.']));
    else if (ep.observation.actions.length === 0) actionsView.appendChild(el('p', { class: 'empty' }, ['No actions listed: type one below.']));
    setText(stepsView, `Step ${ep.steps} / ${maxSteps}`);
    setText(rewardView, `Last reward ${ep.lastReward === null ? '–' : formatReward(ep.lastReward)} · Total ${formatReward(ep.totalReward)}`);
    if (ep.done) {
      const outcome = ep.success ? 'success' : 'failure';
      setText(status, `Episode finished: ${outcome}, reward ${formatReward(ep.totalReward)}`);
      status.setAttribute('data-state', outcome);
    } else {
      setText(status, `In progress: ${maxSteps - ep.steps} step${maxSteps - ep.steps === 1 ? '' : 's'} left.`);
      status.setAttribute('data-state', 'running');
    }
    replaceChildren(
      historyView,
      ep.history.map((entry, i) =>
        el('li', { class: entry.valid ? 'valid' : 'invalid', 'data-valid': String(entry.valid) }, [
          el('span', { class: 'h-step' }, [`${i + 1}.`]),
          el('span', { class: 'h-action' }, [entry.action]),
          el('span', { class: 'h-valid' }, [entry.valid ? 'valid' : 'invalid']),
          el('span', { class: 'h-reward' }, [`r = ${formatReward(entry.reward)}`]),
          entry.message ? el('span', { class: 'h-message' }, [entry.message]) : null,
        ]),
      ),
    );
    historyEmpty.hidden = ep.history.length > 0;
    setControlsEnabled(!ep.done);
  }

  function setControlsEnabled(enabled: boolean): void {
    actionInput.disabled = !enabled;
    actButton.disabled = !enabled;
    hintButton.disabled = !enabled;
  }

  render();
  if (options.autoStart ?? true) newTask();

  return {
    element,
    selectEnv,
    newTask,
    act,
    state(): PlayState {
      const ep = episode;
      return {
        env: current.name,
        split: ep ? (ep.task.split === 'test' ? 'test' : 'train') : currentSplit(),
        task: ep ? ep.task : null,
        taskIndex: ep ? ep.taskIndex : null,
        observation: ep ? ep.observation : null,
        steps: ep ? ep.steps : 0,
        maxSteps: ep ? ep.env.maxSteps : current.maxSteps,
        lastReward: ep ? ep.lastReward : null,
        totalReward: ep ? ep.totalReward : 0,
        done: ep ? ep.done : false,
        success: ep ? ep.success : false,
        history: ep ? ep.history.slice() : [],
      };
    },
    destroy(): void {
      episode = null;
      element.remove();
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
