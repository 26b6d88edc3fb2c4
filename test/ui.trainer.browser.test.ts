import { afterEach, describe, expect, it } from 'vitest';
import { mountTrainerPanel, type TrainerPanelHandle } from '../src/ui/trainer-panel.ts';
import { wrapTrainerWorker } from '../workers/trainer.client.ts';

let panel: TrainerPanelHandle | null = null;
afterEach(() => {
  panel?.destroy();
  panel = null;
  document.body.replaceChildren();
});

const q = (testId: string): HTMLElement => document.querySelector(`[data-testid="${testId}"]`) as HTMLElement;
const field = (name: string): string | null => document.querySelector(`[data-field="${name}"]`)?.textContent ?? null;

async function waitForState(state: string, timeoutMs = 45_000): Promise<void> {
  const start = performance.now();
  while (q('trainer-status').dataset['state'] !== state) {
    if (performance.now() - start > timeoutMs) throw new Error(`trainer status stayed ${q('trainer-status').dataset['state']}: ${q('trainer-status').textContent}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('trainer panel', () => {
  it('preselects ?backend= and starts the real trainer worker on it', async () => {
    panel = mountTrainerPanel(document.body, { url: 'http://localhost/?backend=wasm' });
    expect((q('trainer-backend-select') as HTMLSelectElement).value).toBe('wasm');
    q('trainer-start').click();
    await waitForState('success');
    expect(field('Backend')).toBe('wasm');
    expect(field('Asked for')).toBe('wasm');
    expect(field('GPU adapter')).toBe('not checked (wasm asked for)');
    expect(Number(field('Policy parameters')?.replace(/,/g, ''))).toBeGreaterThan(1000);
  });

  it('auto picks WebGPU only on a real GPU adapter, never on a software (SwiftShader) one, and says why', async () => {
    panel = mountTrainerPanel(document.body, { url: 'http://localhost/' });
    expect((q('trainer-backend-select') as HTMLSelectElement).value).toBe('auto');
    await panel.start();
    expect(q('trainer-status').dataset['state']).toBe('success');
    // Holds with or without a GPU: a software or missing adapter rules WebGPU out.
    const softwareOrNone = /software fallback adapter|none found/.test(field('GPU adapter') ?? '');
    if (softwareOrNone) expect(field('Backend')).not.toBe('webgpu');
    // On a hardware adapter WebGPU is tried first: it runs, or the panel says why it did not.
    else expect(field('Backend') === 'webgpu' || /^webgpu: /.test(field('Tried first') ?? '')).toBe(true);
    expect(field('Why')).toBeTruthy();
  });

  it('names a bad ?backend= value and falls back to auto', () => {
    panel = mountTrainerPanel(document.body, { url: 'http://localhost/?backend=quantum' });
    expect((q('trainer-backend-select') as HTMLSelectElement).value).toBe('auto');
    expect(q('trainer-status').textContent).toMatch(/Unknown backend "quantum".*Using auto/);
  });

  it('shows a plain message when the worker fails to start, and can try again', async () => {
    let calls = 0;
    panel = mountTrainerPanel(document.body, {
      url: 'http://localhost/',
      startWorker: async () => {
        calls++;
        throw new Error('workers are disabled');
      },
    });
    await panel.start('cpu');
    expect((q('trainer-backend-select') as HTMLSelectElement).value).toBe('cpu');
    expect(q('trainer-status').dataset['state']).toBe('failure');
    expect(q('trainer-status').textContent).toBe('The trainer could not start: workers are disabled');
    expect((q('trainer-start') as HTMLButtonElement).disabled).toBe(false);
    await panel.start('cpu');
    expect(calls).toBe(2);
  });

  it('does not hang on "Starting" when the worker file cannot load (404): it fails with a message and re-enables Start', async () => {
    panel = mountTrainerPanel(document.body, {
      url: 'http://localhost/',
      startWorker: async () => wrapTrainerWorker(new Worker(new URL('/no-such-trainer-worker-404.js', location.href), { type: 'module' })),
    });
    const started = performance.now();
    await panel.start('cpu');
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(q('trainer-status').dataset['state']).toBe('failure');
    expect(q('trainer-status').textContent).toMatch(/^The trainer could not start: the trainer worker failed/);
    expect((q('trainer-start') as HTMLButtonElement).disabled).toBe(false);
  });

  it('gives up on a worker that never answers after its start timeout', async () => {
    // A worker that loads but never replies to comlink.
    const silent = URL.createObjectURL(new Blob(['self.onmessage = () => {};'], { type: 'text/javascript' }));
    panel = mountTrainerPanel(document.body, {
      url: 'http://localhost/',
      startTimeoutMs: 300,
      startWorker: async () => wrapTrainerWorker(new Worker(silent)),
    });
    await panel.start('cpu');
    expect(q('trainer-status').textContent).toBe('The trainer could not start: the trainer worker did not answer within 0.3 s');
    expect((q('trainer-start') as HTMLButtonElement).disabled).toBe(false);
    URL.revokeObjectURL(silent);
  });
});
