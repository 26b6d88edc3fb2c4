/**
 * The "trainer" panel: starts the trainer worker (tfjs off the main thread) on the backend the
 * user picks, defaulting to the page's `?backend=` parameter, and reports which backend it chose,
 * why, and the GPU adapter it found. The training loop will drive this same worker.
 */
import type { TrainerWorkerHandle } from '../../workers/trainer.client.ts';
import type { TrainerWorkerInit } from '../../workers/trainer.protocol.ts';
import { BACKEND_NAMES, backendFromUrl, type BackendPreference } from '../policy/backend-preference.ts';
import { el, replaceChildren, setText, uniqueId } from './dom.ts';

/** The policy the panel starts: hashed features of 512 dimensions, the offline default. */
export const DEFAULT_TRAINER_INIT: Omit<TrainerWorkerInit, 'backend'> = {
  config: { policy: { stateDim: 512, actionDim: 512 } },
};

/** Options of {@link mountTrainerPanel}. */
export interface TrainerPanelOptions {
  /** The page URL whose `?backend=` preselects the backend. Default `location.href`. */
  url?: string;
  /** Starts the worker. Default: the real trainer worker, loaded on first use. */
  startWorker?: () => Promise<TrainerWorkerHandle>;
  /** How long starting may take before it fails (default {@link START_TIMEOUT_MS}). */
  startTimeoutMs?: number;
}

/** Handle returned by {@link mountTrainerPanel}. */
export interface TrainerPanelHandle {
  readonly element: HTMLElement;
  /** Starts (or restarts) the worker on `backend` (default: the selected one); resolves when it reports. */
  start(backend?: BackendPreference): Promise<void>;
  /** Stops the worker. */
  destroy(): void;
}

/** How long the worker may take to report before the panel gives up on it. */
export const START_TIMEOUT_MS = 60_000;

/** `promise`, or a rejection after `ms` that says the worker did not answer. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the trainer worker did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

const defaultStartWorker = async (): Promise<TrainerWorkerHandle> => (await import('../../workers/trainer.client.ts')).startTrainerWorker();

/** Mounts the trainer panel into `root`. */
export function mountTrainerPanel(root: HTMLElement, options: TrainerPanelOptions = {}): TrainerPanelHandle {
  const startWorker = options.startWorker ?? defaultStartWorker;
  let urlProblem: string | null = null;
  let preferred: BackendPreference = 'auto';
  try {
    preferred = backendFromUrl(options.url ?? globalThis.location?.href ?? 'http://localhost/') ?? 'auto';
  } catch (e) {
    urlProblem = `${(e as Error).message}. Using auto.`;
  }

  const selectId = uniqueId('trainer-backend');
  const select = el(
    'select',
    { id: selectId, 'data-testid': 'trainer-backend-select' },
    ['auto', ...BACKEND_NAMES].map((name) => el('option', { value: name, selected: name === preferred }, [name])),
  );
  const startButton = el('button', { type: 'button', class: 'primary', 'data-testid': 'trainer-start' }, ['Start trainer']);
  const status = el('p', { class: 'status', role: 'status', 'aria-live': 'polite', 'data-testid': 'trainer-status', 'data-state': 'idle' }, [
    urlProblem ?? 'Not started. The trainer runs TensorFlow.js in a worker; auto picks WebGPU on a real GPU, else WebAssembly, else plain JavaScript.',
  ]);
  const details = el('dl', { class: 'trainer-details', 'data-testid': 'trainer-details' });
  const element = el('section', { class: 'card trainer-panel', 'aria-label': 'Trainer' }, [
    el('h2', {}, ['Trainer']),
    el('div', { class: 'trainer-controls' }, [
      el('div', { class: 'field' }, [el('label', { for: selectId }, ['Backend']), select]),
      startButton,
    ]),
    status,
    details,
  ]);
  root.appendChild(element);

  let handle: TrainerWorkerHandle | null = null;
  let generation = 0;

  async function start(backend: BackendPreference = select.value as BackendPreference): Promise<void> {
    const mine = ++generation;
    // Keep the menu on the backend actually started, so the button restarts that one.
    select.value = backend;
    handle?.terminate();
    handle = null;
    startButton.disabled = true;
    status.dataset.state = 'running';
    setText(status, `Starting the trainer on ${backend}…`);
    replaceChildren(details, []);
    try {
      const worker = await startWorker();
      if (mine !== generation) return worker.terminate();
      handle = worker;
      const info = await withDeadline(Promise.race([worker.api.init({ ...DEFAULT_TRAINER_INIT, backend }), worker.failed]), options.startTimeoutMs ?? START_TIMEOUT_MS);
      if (mine !== generation) return;
      const b = info.backend;
      status.dataset.state = 'success';
      setText(status, `Trainer ready on ${b.backend}${b.backend === 'wasm' ? (b.threaded ? ` (${b.threads} threads)` : ' (single thread)') : ''}.`);
      const rows: Array<[string, string]> = [
        ['Backend', b.backend],
        ['Asked for', b.requested],
        ['Why', b.reason],
        ['GPU adapter', b.adapter
            ? `${b.adapter.description}${b.adapter.isFallbackAdapter ? ' (software fallback adapter)' : ''}`
            : b.requested === 'wasm' || b.requested === 'cpu'
              ? `not checked (${b.requested} asked for)`
              : 'none found'],
        ['Policy parameters', info.parameters.toLocaleString('en-US')],
      ];
      if (b.failures.length > 0) rows.push(['Tried first', b.failures.join('; ')]);
      replaceChildren(
        details,
        rows.flatMap(([k, v]) => [el('dt', {}, [k]), el('dd', { 'data-field': k }, [v])]),
      );
    } catch (e) {
      if (mine !== generation) return;
      status.dataset.state = 'failure';
      setText(status, `The trainer could not start: ${e instanceof Error ? e.message : String(e)}`);
      handle?.terminate();
      handle = null;
    } finally {
      if (mine === generation) startButton.disabled = false;
    }
  }

  startButton.addEventListener('click', () => void start());

  return {
    element,
    start,
    destroy() {
      generation++;
      handle?.terminate();
      handle = null;
      element.remove();
    },
  };
}
