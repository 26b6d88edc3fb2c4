/**
 * The training worker's logic in Node (fake-indexeddb, tfjs cpu): a tiny run from start to
 * evaluation with its events and stored data, pause at an iteration boundary and resume with the
 * metrics history intact, stop with evaluation, and refusals; and runs on a local LLM served
 * through the LLM bridge by a scripted engine (as the page serves its WebLLM client).
 */
import * as tf from '@tensorflow/tfjs';
import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it } from 'vitest';
import { openReplayStore } from '../src/replay/index.ts';
import { installIdbGlobals } from '../src/replay/node.ts';
import { InProcessLockManager } from '../src/replay/index.ts';
import { parseTrainingConfig, type TrainingConfigInput } from '../src/train/config.ts';
import { RunIndex } from '../src/train/runs/records.ts';
import { SNAPSHOT_CHECKPOINT, snapshotFromCheckpoint } from '../src/train/runs/snapshot.ts';
import { fromRecord } from '../src/policy/replay-sink.ts';
import { serializeCheckpoint } from '../src/policy/checkpoint.ts';
import { IMPORTED_CHECKPOINT, TrainingHost } from '../workers/training-host.ts';
import type { LLMLink, TrainingEvent } from '../workers/training.protocol.ts';
import { serveLLMBridge, type BridgeEndpoint, type LLMBridgeServer } from '../src/llm/bridge.ts';
import { LLMRequestError } from '../src/llm/errors.ts';
import { echoScript, ScriptedEngine } from './fixtures/scripted-engine.ts';

installIdbGlobals();
// No "install tfjs-node" banner from the cpu backend.
tf.env().set('PROD', true);

const TINY: TrainingConfigInput = {
  env: 'shop',
  mode: 'dreamgym',
  iterations: 3,
  tasksPerIteration: 2,
  groupSize: 2,
  maxSteps: 5,
  offline: { expertEpisodes: 6, noisyEpisodes: 4, extraTasks: 2 },
  sft: { epochs: 1 },
  evalEpisodes: 3,
  policy: { hiddenDim: 8, embeddingDim: 32 },
  curriculum: { perIteration: 1 },
};

function setup() {
  const indexedDB = new IDBFactory();
  const locks = new InProcessLockManager();
  const events: TrainingEvent[] = [];
  let onEvent: (e: TrainingEvent) => void = () => undefined;
  const host = new TrainingHost({
    post: (e) => {
      events.push(e);
      onEvent(e);
    },
    chooseBackend: null,
    indexedDB,
    locks,
  });
  return { host, events, indexedDB, locks, setOnEvent: (f: (e: TrainingEvent) => void) => (onEvent = f) };
}

const kinds = (events: readonly TrainingEvent[]) => events.map((e) => e.kind);

describe('training host', () => {
  it('runs a tiny run to its evaluation and stores what it did', async () => {
    const { host, events, indexedDB, locks } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'start', runId: 'r1', config });

    const k = kinds(events);
    expect(k[0]).toBe('backend');
    expect(k).toContain('seed');
    expect(k.filter((x) => x === 'iteration')).toHaveLength(3);
    expect(k.filter((x) => x === 'iteration-start')).toHaveLength(3);
    expect(k.at(-1)).toBe('finished');
    // The synthetic phase is validated at its start (after 0 iterations) and at its end (after 3),
    // each validation reported from none to all of its tasks.
    const validating = events.filter((e): e is Extract<TrainingEvent, { kind: 'validating' }> => e.kind === 'validating');
    expect(validating.filter((e) => e.done === 0).map((e) => e.iteration)).toEqual([0, 3]);
    expect(validating.filter((e) => e.done === e.total && e.total > 0).map((e) => e.iteration)).toEqual([0, 3]);
    const seed = events.filter((e): e is Extract<TrainingEvent, { kind: 'seed' }> => e.kind === 'seed');
    expect(seed.at(-1)?.done).toBe(seed.at(-1)?.total);
    expect(seed.at(-1)?.total).toBeGreaterThan(0);
    const finished = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(finished.evaluation.episodes).toBe(3);
    expect(finished.evaluation.success.low).toBeLessThanOrEqual(finished.evaluation.success.mean);
    expect(finished.record).toMatchObject({ status: 'done', iteration: 3, totalIterations: 3, realTransitions: 0, stoppedBy: 'done' });

    const index = await RunIndex.open({ indexedDB });
    expect(await index.get('r1')).toMatchObject({ status: 'done', iteration: 3 });
    index.close();
    const replay = await openReplayStore({ indexedDB, locks });
    const counts = await replay.counts('r1');
    expect(counts.bySource.offline.trajectories).toBeGreaterThan(0);
    expect(counts.bySource.synthetic.trajectories).toBeGreaterThan(0);
    expect(counts.bySource.real.trajectories).toBe(0);
    expect((await replay.readMetrics('r1')).map((m) => m.iteration)).toEqual([0, 1, 2]);
    const snap = snapshotFromCheckpoint(await replay.loadCheckpoint('r1', SNAPSHOT_CHECKPOINT));
    expect(snap.iteration).toBe(3);
    expect(await replay.isRunLocked('r1')).toBe(false);
    await replay.close();
  });

  it('pauses at an iteration boundary and resumes with its metrics history', async () => {
    const { host, events, setOnEvent } = setup();
    const config = parseTrainingConfig(TINY);
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'pause' });
    });
    await host.handle({ kind: 'start', runId: 'r2', config });
    expect(events.at(-1)).toMatchObject({ kind: 'paused', record: { status: 'paused', iteration: 1 } });
    expect(kinds(events)).not.toContain('finished');
    const first = events.filter((e) => e.kind === 'iteration');
    expect(first).toHaveLength(1);

    setOnEvent(() => undefined);
    events.length = 0;
    await host.handle({ kind: 'resume', runId: 'r2' });
    const started = events.find((e) => e.kind === 'started') as Extract<TrainingEvent, { kind: 'started' }>;
    expect(started.metrics.map((m) => m.iteration)).toEqual([0]);
    expect(started.record.iteration).toBe(1);
    expect(kinds(events)).not.toContain('seed');
    const later = events.filter((e): e is Extract<TrainingEvent, { kind: 'iteration' }> => e.kind === 'iteration');
    expect(later.map((e) => e.metrics.iteration)).toEqual([1, 2]);
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 3 } });
  });

  it('stops early and evaluates the policy as it stands', async () => {
    const { host, events, setOnEvent } = setup();
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'stop' });
    });
    await host.handle({ kind: 'start', runId: 'r3', config: parseTrainingConfig(TINY) });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 1, stoppedBy: 'user' }, evaluation: { iteration: 1 } });
  });

  it('refuses to resume a finished or unknown run, and a second run while one trains', async () => {
    const { host, events } = setup();
    await host.handle({ kind: 'resume', runId: 'nope' });
    expect(events.at(-1)).toMatchObject({ kind: 'failed', runId: 'nope' });
    expect((events.at(-1) as { message: string }).message).toMatch(/no run "nope"/);

    const running = host.handle({ kind: 'start', runId: 'r4', config: parseTrainingConfig({ ...TINY, iterations: 1 }) });
    await host.handle({ kind: 'start', runId: 'r5', config: parseTrainingConfig(TINY) });
    expect(events.at(-1)).toMatchObject({ kind: 'failed', runId: 'r5' });
    await running;
    expect(events.at(-1)).toMatchObject({ kind: 'finished' });
    await host.handle({ kind: 'resume', runId: 'r4' });
    expect((events.at(-1) as { message: string }).message).toMatch(/is done: nothing to resume/);
  });

  it('evaluates an imported checkpoint file as a new run with the result of the run it came from', async () => {
    const { host, events, indexedDB, locks } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'start', runId: 'src', config });
    const original = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(original.kind).toBe('finished');
    const replay = await openReplayStore({ indexedDB, locks });
    const snapshot = snapshotFromCheckpoint(await replay.loadCheckpoint('src', SNAPSHOT_CHECKPOINT));
    const file = serializeCheckpoint(snapshot.checkpoint);
    await replay.close();

    events.length = 0;
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'imp', config, checkpoint: file, fileName: 'p.dgckpt' });
    const finished = events.at(-1) as Extract<TrainingEvent, { kind: 'finished' }>;
    expect(kinds(events)).toEqual(expect.arrayContaining(['backend', 'started', 'evaluating', 'finished']));
    expect(finished.kind).toBe('finished');
    expect(finished.record.imported).toEqual({ file: 'p.dgckpt', updates: snapshot.checkpoint.iteration });
    expect(finished.evaluation.success).toEqual(original.evaluation.success);
    expect(finished.evaluation.meanReward).toBe(original.evaluation.meanReward);
    // The imported policy is kept with the new run, weight for weight.
    const again = await openReplayStore({ indexedDB, locks });
    const kept = fromRecord(await again.loadCheckpoint('imp', IMPORTED_CHECKPOINT));
    expect(kept.weights.map((w) => Array.from(w.data))).toEqual(snapshot.checkpoint.weights.map((w) => Array.from(w.data)));
    await again.close();
  });

  it('refuses a corrupt checkpoint file and a feature-width mismatch without leaving a run', async () => {
    const { host, events, indexedDB } = setup();
    const config = parseTrainingConfig(TINY);
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'bad', config, checkpoint: new Uint8Array([1, 2, 3]), fileName: 'junk.bin' });
    const failed = events.at(-1) as Extract<TrainingEvent, { kind: 'failed' }>;
    expect(failed.kind).toBe('failed');
    expect(failed.message).toMatch(/bad magic/);

    await host.handle({ kind: 'start', runId: 'src', config });
    const replay = await openReplayStore({ indexedDB });
    const file = serializeCheckpoint(snapshotFromCheckpoint(await replay.loadCheckpoint('src', SNAPSHOT_CHECKPOINT)).checkpoint);
    await replay.close();
    const wider = parseTrainingConfig({ ...TINY, policy: { hiddenDim: 8, embeddingDim: 64 } });
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'wide', config: wider, checkpoint: file, fileName: 'p.dgckpt' });
    const mismatch = events.at(-1) as Extract<TrainingEvent, { kind: 'failed' }>;
    expect(mismatch.kind).toBe('failed');
    expect(mismatch.message).toMatch(/state\/action features of width/);
    const index = await RunIndex.open({ indexedDB });
    expect((await index.list()).map((r) => r.id)).toEqual(['src']);
    index.close();
  });
});

/** A scripted LLM served as the page serves its WebLLM client, and the link a command carries. */
function llmLink(models: { chatModel?: string; embeddingModel?: string | null; labelLogits?: boolean } = {}) {
  const engine = new ScriptedEngine({ chat: echoScript, logits: () => ({ A: 1, B: 0.5 }) });
  const channel = new MessageChannel();
  let closed = 0;
  const labelLogits = { labelLogits: async (_r: unknown, labels: readonly string[]) => new Float32Array(labels.map((_, i) => -i)) };
  const server: LLMBridgeServer = serveLLMBridge(channel.port1 as BridgeEndpoint, { chat: engine, embeddings: engine, labelLogits }, { onClose: () => closed++ });
  const link: LLMLink = {
    port: channel.port2,
    chatModel: models.chatModel ?? 'scripted-chat',
    embeddingModel: models.embeddingModel === undefined ? 'scripted-embed' : models.embeddingModel,
    labelLogits: models.labelLogits ?? true,
  };
  return { engine, server, link, closed: () => closed };
}

/** Chat requests the experience model sent (its system prompt casts the LLM as the environment simulator). */
const simRequests = (engine: ScriptedEngine) => engine.requests.filter((r) => String(r.messages[0]?.content).startsWith('You are the environment simulator')).length;

describe('training host with a local LLM (bridge)', () => {
  const LLM_TINY: TrainingConfigInput = { ...TINY, sim: 'llm', prior: 'llm', iterations: 2 };

  it('trains on the LLM: experience model, prior, task generator and feature embeddings all go through the bridge', async () => {
    const { host, events, indexedDB } = setup();
    const llm = llmLink();
    await host.handle({ kind: 'start', runId: 'l1', config: parseTrainingConfig(LLM_TINY), llm: llm.link });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 2, llm: { chatModel: 'scripted-chat', embeddingModel: 'scripted-embed' } } });
    expect(simRequests(llm.engine)).toBeGreaterThan(0);
    expect(llm.engine.embeddingRequests.length).toBeGreaterThan(1);
    expect(llm.engine.embeddingRequests.every((r) => r.model === 'scripted-embed')).toBe(true);
    expect(llm.engine.requests.every((r) => r.model === 'scripted-chat')).toBe(true);
    expect(llm.server.stats['label-logits']).toBeGreaterThan(0);
    const iterations = events.filter((e): e is Extract<TrainingEvent, { kind: 'iteration' }> => e.kind === 'iteration');
    expect(iterations.map((e) => e.metrics.simCalls).every((n) => n > 0)).toBe(true);
    // The run let go of the bridge.
    await expect.poll(() => llm.closed()).toBe(1);
    const replay = await openReplayStore({ indexedDB });
    expect((await replay.counts('l1')).trajectories).toBeGreaterThan(0);
    await replay.close();
  });

  it('a run made with the LLM resumes only with its models; the LLM failing mid-run fails the run with its message', async () => {
    const { host, events, setOnEvent } = setup();
    const first = llmLink({ embeddingModel: null, labelLogits: false });
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'pause' });
    });
    await host.handle({ kind: 'start', runId: 'l2', config: parseTrainingConfig({ ...LLM_TINY, iterations: 3 }), llm: first.link });
    expect(events.at(-1)).toMatchObject({ kind: 'paused', record: { llm: { chatModel: 'scripted-chat', embeddingModel: null } } });
    // Logprobs readout without label logits: no label-logit request was made.
    expect(first.server.stats['label-logits']).toBe(0);
    setOnEvent(() => undefined);

    await host.handle({ kind: 'resume', runId: 'l2' });
    expect((events.at(-1) as { message: string }).message).toMatch(/trains on the local LLM scripted-chat: load that model to resume it/);
    // Refused, not failed: the run stays resumable.
    expect(events.at(-1)).toMatchObject({ record: { status: 'paused' } });
    const other = llmLink({ chatModel: 'other-chat', embeddingModel: null });
    await host.handle({ kind: 'resume', runId: 'l2', llm: other.link });
    expect((events.at(-1) as { message: string }).message).toMatch(/but the page offered other-chat/);
    // The link the run refused is closed, so the page stops serving it.
    await expect.poll(() => other.closed()).toBe(1);

    // The page unloads the model while the run trains: the run fails with the LLM's own message.
    const second = llmLink({ embeddingModel: null });
    setOnEvent((e) => {
      if (e.kind === 'iteration-start') second.server.close(new LLMRequestError('the local LLM was unloaded'));
    });
    await host.handle({ kind: 'resume', runId: 'l2', llm: second.link });
    expect(events.at(-1)).toMatchObject({ kind: 'failed', runId: 'l2', message: 'the local LLM was unloaded', record: { status: 'paused', iteration: 1, error: 'the local LLM was unloaded' } });

    const third = llmLink({ embeddingModel: null });
    setOnEvent(() => undefined);
    await host.handle({ kind: 'resume', runId: 'l2', llm: third.link });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 3 } });
    expect(simRequests(third.engine)).toBeGreaterThan(0);
  });

  it('evaluates a checkpoint file with the LLM prior through the bridge', async () => {
    const { host, events, indexedDB } = setup();
    const config = parseTrainingConfig({ ...TINY, iterations: 1 });
    await host.handle({ kind: 'start', runId: 'src', config });
    const replay = await openReplayStore({ indexedDB });
    const file = serializeCheckpoint(snapshotFromCheckpoint(await replay.loadCheckpoint('src', SNAPSHOT_CHECKPOINT)).checkpoint);
    await replay.close();
    const llm = llmLink({ embeddingModel: null });
    await host.handle({ kind: 'evaluate-checkpoint', runId: 'ev', config: parseTrainingConfig({ ...TINY, iterations: 1, prior: 'llm' }), checkpoint: file, fileName: 'p.dgckpt', llm: llm.link });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { id: 'ev', status: 'done', llm: { chatModel: 'scripted-chat', embeddingModel: null } } });
    // Every greedy evaluation step asked the LLM prior (label logits through the bridge).
    expect(llm.server.stats['label-logits']).toBeGreaterThan(0);
    await expect.poll(() => llm.closed()).toBe(1);
  });

  it('a run on the LLM stopped mid-way is still evaluated with the LLM prior', async () => {
    const { host, events, setOnEvent } = setup();
    const llm = llmLink({ embeddingModel: null });
    setOnEvent((e) => {
      if (e.kind === 'iteration' && e.iteration === 1) void host.handle({ kind: 'stop' });
    });
    await host.handle({ kind: 'start', runId: 'ls', config: parseTrainingConfig({ ...LLM_TINY, iterations: 5 }), llm: llm.link });
    expect(events.at(-1)).toMatchObject({ kind: 'finished', record: { status: 'done', iteration: 1, stoppedBy: 'user' }, evaluation: { iteration: 1 } });
    const evaluating = events.findIndex((e) => e.kind === 'evaluating');
    expect(evaluating).toBeGreaterThan(0);
    expect(llm.server.stats.failed).toBe(0);
  });
});
