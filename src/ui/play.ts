/**
 * The "play" panel: a person acts as the agent in one of the real, rule-based environments.
 * Pick an environment, a split and a task, then act with the admissible-action buttons or by
 * typing any action. Everything the environment or the task says is rendered as text only
 * (./play-view.ts draws it).
 */
import type { EnvName, Observation, StepResult, Task } from '../core/types.ts';
import type { EnvSpec, Split } from '../envs/spec.ts';
import { buildPlayView, clearHint, MAX_ACTION_LENGTH, renderEpisode, showHintText, showMessage, type Episode, type PlayView } from './play-view.ts';

export { MAX_ACTION_LENGTH } from './play-view.ts';

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

/** How the panel picks its tasks. */
interface TaskSource {
  taskCount: number;
  taskSeed: number;
  random: () => number;
}

/** The panel's behaviour: the episode played, and what each control does to it. */
class PlayPanel {
  private episode: Episode | null = null;
  private readonly taskCache = new Map<string, Task[]>();

  constructor(
    private readonly view: PlayView,
    private readonly specs: readonly EnvSpec[],
    private current: EnvSpec,
    private readonly source: TaskSource,
  ) {
    for (const [name, input] of view.envInputs) {
      input.addEventListener('change', () => {
        if (input.checked) this.selectEnv(name);
      });
    }
    view.controls.addEventListener('submit', (event) => {
      event.preventDefault();
      this.newTask();
    });
    view.newTaskButton.addEventListener('click', () => this.newTask());
    view.actForm.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submitTyped();
    });
    view.hintButton.addEventListener('click', () => this.showHint());
  }

  private tasksFor(spec: EnvSpec, split: Split): Task[] {
    const key = `${spec.name}:${split}`;
    let tasks = this.taskCache.get(key);
    if (!tasks) {
      tasks = spec.tasks({ split, count: this.source.taskCount, seed: this.source.taskSeed });
      this.taskCache.set(key, tasks);
    }
    return tasks;
  }

  private currentSplit(): Split {
    return this.view.splitSelect.value === 'test' ? 'test' : 'train';
  }

  /** The task number asked for (by the caller, else the form), or null after reporting a bad one. */
  private chosenIndex(opts: NewTaskOptions, count: number): number | 'random' | null {
    const { indexInput } = this.view;
    if (opts.index === undefined) {
      const choice = parseIndex(indexInput.value, count);
      if (choice === null) {
        showMessage(this.view, `Task # must be a whole number from 0 to ${count - 1}, or blank for a random task.`, 'error');
        indexInput.focus();
      }
      return choice;
    }
    const choice = opts.index;
    if (choice !== 'random' && !(Number.isInteger(choice) && choice >= 0 && choice < count)) {
      throw new RangeError(`Task number must be an integer in [0, ${count - 1}], got ${choice}`);
    }
    indexInput.value = choice === 'random' ? '' : String(choice);
    return choice;
  }

  newTask(opts: NewTaskOptions = {}): Task | null {
    const split = opts.split ?? this.currentSplit();
    if (opts.split) this.view.splitSelect.value = opts.split;
    const current = this.current;
    let tasks: Task[];
    try {
      tasks = this.tasksFor(current, split);
    } catch (error) {
      showMessage(this.view, `Could not generate ${current.name} tasks: ${errorText(error)}`, 'error');
      return null;
    }
    if (tasks.length === 0) {
      showMessage(this.view, `The ${current.name} environment has no ${split} tasks.`, 'error');
      return null;
    }
    const choice = this.chosenIndex(opts, tasks.length);
    if (choice === null) return null;
    const index = choice === 'random' ? Math.min(tasks.length - 1, Math.floor(this.source.random() * tasks.length)) : choice;
    const task = tasks[index];
    if (!task) return null;
    try {
      const env = current.create();
      const observation = env.reset(task);
      this.episode = { spec: current, env, task, taskIndex: index, observation, steps: 0, lastReward: null, totalReward: 0, done: false, success: false, history: [] };
    } catch (error) {
      this.episode = null;
      showMessage(this.view, `Could not start task ${task.id}: ${errorText(error)}`, 'error');
      this.render();
      return null;
    }
    showMessage(this.view, null);
    clearHint(this.view);
    this.render();
    return task;
  }

  private submitTyped(): void {
    const { actionInput } = this.view;
    const text = actionInput.value.trim();
    if (text === '') {
      actionInput.focus();
      return;
    }
    if (this.act(text)) actionInput.value = '';
    actionInput.focus();
  }

  act(action: string): StepResult | null {
    const ep = this.episode;
    if (!ep || ep.done) return null;
    if (action.length > MAX_ACTION_LENGTH) {
      showMessage(this.view, `That action is ${action.length} characters long; actions are at most ${MAX_ACTION_LENGTH}.`, 'invalid');
      return null;
    }
    const { actionsView, newTaskButton } = this.view;
    const focusWasOnAction = document.activeElement instanceof HTMLElement && actionsView.contains(document.activeElement);
    let result: StepResult;
    try {
      result = ep.env.step(action);
    } catch (error) {
      showMessage(this.view, `The environment failed on this action: ${errorText(error)}`, 'error');
      return null;
    }
    const entry = recordStep(ep, action, result);
    clearHint(this.view);
    if (!result.info.valid) {
      // The environment's message may lack its full stop; the sentence after it needs one.
      const why = entry.message ? `: ${entry.message}${/[.!?…]$/.test(entry.message) ? '' : '.'}` : '.';
      showMessage(this.view, `Invalid action “${action}”${why}${result.done ? '' : ' The episode continues.'}`, 'invalid');
    } else if (result.done && entry.message) {
      showMessage(this.view, entry.message, 'info');
    } else {
      showMessage(this.view, null);
    }
    this.render();
    if (focusWasOnAction) {
      const next = actionsView.querySelector('button:not([disabled])');
      if (next instanceof HTMLElement) next.focus();
      else newTaskButton.focus();
    }
    return result;
  }

  private showHint(): void {
    const ep = this.episode;
    if (!ep || ep.done) return;
    let action: string;
    try {
      action = ep.env.expertAction();
    } catch (error) {
      showMessage(this.view, `The expert could not suggest an action: ${errorText(error)}`, 'error');
      return;
    }
    showHintText(this.view, action);
  }

  selectEnv(name: EnvName): void {
    const spec = this.specs.find((s) => s.name === name);
    if (!spec) throw new RangeError(`Unknown environment ${JSON.stringify(name)}`);
    const input = this.view.envInputs.get(name);
    if (input && !input.checked) input.checked = true;
    if (spec === this.current && this.episode) return;
    this.current = spec;
    if (this.newTask() === null && this.episode && this.episode.spec !== this.current) {
      // No task started (e.g. a bad task number), so the running episode stays: keep the picker
      // on its environment rather than showing one environment while acting in another.
      this.current = this.episode.spec;
      const running = this.view.envInputs.get(this.current.name);
      if (running) running.checked = true;
    }
  }

  render(): void {
    const ep = this.episode;
    renderEpisode(this.view, ep, ep ? ep.env.maxSteps : this.current.maxSteps, (action) => this.act(action));
  }

  state(): PlayState {
    const ep = this.episode;
    return {
      env: this.current.name,
      split: ep ? (ep.task.split === 'test' ? 'test' : 'train') : this.currentSplit(),
      task: ep ? ep.task : null,
      taskIndex: ep ? ep.taskIndex : null,
      observation: ep ? ep.observation : null,
      steps: ep ? ep.steps : 0,
      maxSteps: ep ? ep.env.maxSteps : this.current.maxSteps,
      lastReward: ep ? ep.lastReward : null,
      totalReward: ep ? ep.totalReward : 0,
      done: ep ? ep.done : false,
      success: ep ? ep.success : false,
      history: ep ? ep.history.slice() : [],
    };
  }

  destroy(): void {
    this.episode = null;
    this.view.element.remove();
  }
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
  const initial = options.initialEnv === undefined ? first : specs.find((s) => s.name === options.initialEnv);
  if (!initial) throw new RangeError(`Unknown initial environment ${JSON.stringify(options.initialEnv)}`);

  const view = buildPlayView(specs, initial, taskCount);
  const panel = new PlayPanel(view, specs, initial, { taskCount, taskSeed: options.taskSeed ?? 0, random: options.random ?? Math.random });
  root.appendChild(view.element);
  panel.render();
  if (options.autoStart ?? true) panel.newTask();
  return {
    element: view.element,
    selectEnv: (name) => panel.selectEnv(name),
    newTask: (opts) => panel.newTask(opts),
    act: (action) => panel.act(action),
    state: () => panel.state(),
    destroy: () => panel.destroy(),
  };
}

/** Applies a step's result to the episode and returns its history entry. */
function recordStep(ep: Episode, action: string, result: StepResult): HistoryEntry {
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
  return entry;
}

/** A typed task number: 'random' when blank, null when not a number below `count`. */
function parseIndex(raw: string, count: number): number | 'random' | null {
  const text = raw.trim();
  if (text === '' || text.toLowerCase() === 'random') return 'random';
  if (!/^\d+$/.test(text)) return null;
  const n = Number(text);
  return n < count ? n : null;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
