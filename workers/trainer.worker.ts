/**
 * The trainer worker: backend choice, forward passes, updates and checkpoints off the main
 * thread, behind the typed RPC of ./trainer.protocol.ts (comlink). Start it with
 * `startTrainerWorker()` from ./trainer.client.ts.
 */
import '../src/core/strict-csp.ts';
import * as Comlink from 'comlink';
import { currentGpuDevice } from '../src/policy/backend.ts';
import { parseCheckpoint, type CheckpointSink } from '../src/policy/checkpoint.ts';
import { ReplayCheckpointSink } from '../src/policy/replay-sink.ts';
import { TFJS_WASM_PATHS } from '../src/policy/wasm-urls.ts';
import { openReplayStore, type ReplayStore } from '../src/replay/index.ts';
import { TrainingSession } from '../src/rl/session.ts';
import type { TrainerRpc } from './trainer.protocol.ts';

let session: TrainingSession | null = null;
let replay: ReplayStore | null = null;

function live(): TrainingSession {
  if (!session) throw new Error('trainer worker: call init() first');
  return session;
}

const api: TrainerRpc = {
  async init(options) {
    await closeSession();
    let sink: CheckpointSink | undefined;
    let checkpoint = options.checkpoint ? parseCheckpoint(options.checkpoint) : undefined;
    if (options.checkpointRun) {
      replay = await openReplayStore(options.checkpointRun.store !== undefined ? { name: options.checkpointRun.store } : {});
      sink = new ReplayCheckpointSink(replay, options.checkpointRun.runId);
      checkpoint ??= await sink.loadLatest();
    }
    session = await TrainingSession.start({
      config: options.config,
      backend: options.backend ?? 'auto',
      wasmPaths: TFJS_WASM_PATHS,
      ...(options.checkpointEvery !== undefined ? { checkpointEvery: options.checkpointEvery } : {}),
      ...(checkpoint ? { checkpoint } : {}),
      ...(sink ? { sink } : {}),
    });
    return session.info();
  },
  info: () => Promise.resolve(live().info()),
  act: (decisions, options) => live().act(decisions, options),
  logits: async (decisions) => {
    // A copy owns its buffer, so transferring it cannot detach memory a backend still uses.
    const out = (await live().logits(decisions)).slice();
    return Comlink.transfer(out, [out.buffer]);
  },
  grpo: (batch) => live().grpo(batch),
  ppo: (batch) => live().ppo(batch),
  sft: (examples) => live().sft(examples),
  syncReference: () => Promise.resolve(live().syncReference()),
  exportCheckpoint: async () => {
    const bytes = await live().exportCheckpoint();
    return Comlink.transfer(bytes, [bytes.buffer as ArrayBuffer]);
  },
  importCheckpoint: (file) => live().importCheckpoint(file),
  loseDevice: () => {
    const device = currentGpuDevice();
    if (!device) return Promise.resolve(false);
    device.destroy();
    return Promise.resolve(true);
  },
  dispose: () => closeSession(),
};

async function closeSession(): Promise<void> {
  session?.dispose();
  session = null;
  await replay?.close();
  replay = null;
}

Comlink.expose(api);
