/**
 * The training worker: runs the DreamGym loop (src/train) with tfjs off the main thread, so the
 * page never blocks. Commands and events are the `kind` unions of ./training.protocol.ts; the
 * logic lives in ./training-host.ts. Start it with `startTrainingWorker()` (./training.client.ts).
 */
import '../src/core/strict-csp.ts';
import { chooseBackend } from '../src/policy/backend.ts';
import { TFJS_WASM_PATHS } from '../src/policy/wasm-urls.ts';
import { TrainingHost } from './training-host.ts';
import type { TrainingCommand, TrainingEvent } from './training.protocol.ts';

const scope = self as unknown as { postMessage(event: TrainingEvent): void; onmessage: ((event: MessageEvent<TrainingCommand>) => void) | null };

const host = new TrainingHost({
  post: (event) => scope.postMessage(event),
  chooseBackend: (prefer) => chooseBackend({ prefer, wasmPaths: TFJS_WASM_PATHS }),
});

scope.onmessage = (event) => {
  void host.handle(event.data);
};
