/**
 * `dreamgym doctor --store DIR [--dry-run]` (src/cli/doctor.ts): reports every damaged run of the
 * file-backed run store by file, removes only debris no command reads, leaves damaged runs and
 * runs a live process trains in place, and says what it did.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Task } from '../src/core/types.ts';
import { getEnvSpec } from '../src/envs/registry.ts';
import { generateOfflineData } from '../src/envs/offline.ts';
import type { Checkpoint } from '../src/policy/checkpoint.ts';
import { RunStore } from '../src/cli/run-store.ts';
import { parseTrainingConfig } from '../src/train/config.ts';
import type { RunSnapshot } from '../src/train/loop.ts';
import { cli, tree } from './fixtures/cli.ts';

const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', iterations: 3 });
const DEAD_PID = 2147483646;
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-doctor-'));
});

function checkpoint(iteration: number): Checkpoint {
  return {
    format: 'dreamgym-checkpoint',
    version: 1,
    iteration,
    config: { note: 'test' },
    weights: [{ name: 'w', shape: [2], dtype: 'float32', data: new Float32Array([iteration, 2]) }],
    optimizer: { kind: 'adam', step: iteration, slots: [] },
  };
}

function snapshot(iteration: number, pool: Task[]): RunSnapshot {
  return {
    format: 'dreamgym-run', version: 1, config, iteration, pool, lastSeen: {}, metrics: [],
    realTransitions: 0, realResets: 0, syntheticSteps: 0, checkpoint: checkpoint(iteration), wallMs: 1,
  };
}

/** A run with one committed iteration (rollouts, snapshot, checkpoint); returns its directory. */
async function makeRun(store: RunStore, at: number): Promise<{ id: string; dir: string }> {
  const writer = await store.create(config, 3, new Date(Date.UTC(2025, 0, 1, 0, 0, at)));
  const pairs = [...generateOfflineData(getEnvSpec('shop'), { episodes: 2, seed: at, policy: 'expert', split: 'train' })];
  const tasks = pairs.map((p) => p.task);
  await writer.appendRollouts(pairs.map((p) => p.trajectory), tasks);
  await writer.persist(snapshot(1, tasks));
  await writer.update({ iteration: 1 });
  await writer.release();
  return { id: writer.id, dir: store.runDir(writer.id) };
}

const files = async (d: string): Promise<string[]> => (await readdir(d)).sort();

describe('dreamgym doctor', () => {
  it('a healthy store: every run ok, exit 0', async () => {
    const store = new RunStore(dir);
    const a = await makeRun(store, 1);
    const r = await cli('doctor', '--store', dir);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`${a.id}: ok`);
    expect(r.out).toMatch(/1 runs, 1 usable, 0 damaged/);
  });

  it('reports damaged runs per file and removes only debris; --dry-run changes nothing', async () => {
    const store = new RunStore(dir);
    const ok = await makeRun(store, 1);
    const debris = await makeRun(store, 2);
    const badRecord = await makeRun(store, 3);
    const badRollouts = await makeRun(store, 4);
    const badCheckpoint = await makeRun(store, 5);
    // Debris: a dead process's lock, an uncommitted rollouts tail, a stale checkpoint.next.bin, a temporary file.
    const committed = (await stat(join(debris.dir, 'rollouts.jsonl'))).size;
    await writeFile(join(debris.dir, 'lock'), JSON.stringify({ pid: DEAD_PID, host: hostname(), since: 'x' }));
    await appendFile(join(debris.dir, 'rollouts.jsonl'), '{"v":1,"type":"tra');
    await writeFile(join(debris.dir, 'checkpoint.next.bin'), 'half');
    await writeFile(join(debris.dir, `run.json.partial-${DEAD_PID}-1`), '{');
    // Damage.
    await writeFile(join(badRecord.dir, 'run.json'), '{"format": "dreamgym-cli-run", ');
    const rollouts = await readFile(join(badRollouts.dir, 'rollouts.jsonl'), 'utf8');
    await writeFile(join(badRollouts.dir, 'rollouts.jsonl'), rollouts.replace('"type":"trajectory"', '"type":"trajectorx"'));
    const cp = await readFile(join(badCheckpoint.dir, 'checkpoint.bin'));
    cp[cp.length - 1] = (cp[cp.length - 1] as number) ^ 0xff;
    await writeFile(join(badCheckpoint.dir, 'checkpoint.bin'), cp);

    const before = await Promise.all([debris, badRecord, badRollouts, badCheckpoint].map((r) => files(r.dir)));
    const dry = await cli('doctor', '--store', dir, '--dry-run');
    expect(dry.code).toBe(1);
    expect(dry.out).toContain(`${ok.id}: ok`);
    expect(dry.out).toContain(`${debris.id}: would remove the stale lock of process ${DEAD_PID}`);
    expect(dry.out).toMatch(new RegExp(`${debris.id}: would cut rollouts.jsonl back to the ${committed} bytes`));
    expect(dry.out).toContain(`${debris.id}: would remove checkpoint.next.bin`);
    expect(dry.out).toContain(`${debris.id}: would remove run.json.partial-${DEAD_PID}-1`);
    expect(dry.out).toMatch(new RegExp(`${badRecord.id}: damaged: .*run\\.json: not valid JSON`));
    expect(dry.out).toMatch(new RegExp(`${badRollouts.id}: damaged: .*rollouts\\.jsonl: line \\d+`));
    expect(dry.out).toMatch(new RegExp(`${badCheckpoint.id}: damaged: .*checkpoint\\.bin: missing, or not the checkpoint`));
    expect(dry.out).toContain(`${badRecord.id}: left as it is (nothing of it changed)`);
    expect(dry.out).toMatch(/5 runs, 2 usable, 3 damaged, 0 not checked; dry run/);
    expect(await Promise.all([debris, badRecord, badRollouts, badCheckpoint].map((r) => files(r.dir)))).toEqual(before);
    expect((await stat(join(debris.dir, 'rollouts.jsonl'))).size).toBeGreaterThan(committed);

    const fixed = await cli('doctor', '--store', dir);
    expect(fixed.code).toBe(1);
    expect(fixed.out).toContain(`${debris.id}: removed the stale lock of process ${DEAD_PID}`);
    expect(await files(debris.dir)).toEqual(['checkpoint.bin', 'rollouts.jsonl', 'run.json', 'snapshot.json']);
    expect((await stat(join(debris.dir, 'rollouts.jsonl'))).size).toBe(committed);
    // Damaged runs keep every file.
    expect(await Promise.all([badRecord, badRollouts, badCheckpoint].map((r) => files(r.dir)))).toEqual(before.slice(1));
    // The repaired run reads back: `runs` lists it, and doctor now finds it ok.
    const again = await cli('doctor', '--store', dir);
    expect(again.out).toContain(`${debris.id}: ok`);
    expect(again.out).toMatch(/removed debris from 0 runs/);
  });

  it('a run a live process trains is not touched; a missing store is an error', async () => {
    const store = new RunStore(dir);
    const live = await makeRun(store, 1);
    await writeFile(join(live.dir, 'lock'), JSON.stringify({ pid: process.pid, host: hostname(), since: 'x' }));
    await appendFile(join(live.dir, 'rollouts.jsonl'), 'being written');
    const r = await cli('doctor', '--store', dir);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`${live.id}: not checked: locked by process ${process.pid}`);
    expect(await readFile(join(live.dir, 'rollouts.jsonl'), 'utf8')).toMatch(/being written$/);
    const missing = await cli('doctor', '--store', join(dir, 'nope'));
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no run store at .*nope/);
  });

  it('changes nothing of a damaged run, not even what would be debris in a sound one', async () => {
    const store = new RunStore(dir);
    const run = await makeRun(store, 1);
    await writeFile(join(run.dir, 'lock'), JSON.stringify({ pid: DEAD_PID, host: hostname(), since: 'x' }));
    await appendFile(join(run.dir, 'rollouts.jsonl'), '{"v":1,"type":"tra');
    await writeFile(join(run.dir, `run.json.partial-${DEAD_PID}-1`), '{');
    await writeFile(join(run.dir, 'run.json'), '{"format": "dreamgym-cli-run", ');
    const before = await tree(run.dir);
    const r = await cli('doctor', '--store', dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`${run.id}: damaged: .*run\\.json: not valid JSON`));
    expect(r.out).toContain(`${run.id}: left as it is (nothing of it changed)`);
    expect(r.out).not.toMatch(new RegExp(`${run.id}: (removed|cut|renamed)`));
    expect(await tree(run.dir)).toEqual(before);
  });

  it('a lost snapshot.json is damage: every byte of rollouts.jsonl stays, no command reads the run as empty, and --rebuild recovers its complete lines', async () => {
    const store = new RunStore(dir);
    const run = await makeRun(store, 1);
    const rolloutsFile = join(run.dir, 'rollouts.jsonl');
    const committed = await readFile(rolloutsFile, 'utf8');
    // A write cut off after the last snapshot, then the snapshot lost.
    await appendFile(rolloutsFile, '{"v":1,"type":"trajectory","traj');
    await rm(join(run.dir, 'snapshot.json'));
    const before = await tree(run.dir);

    const r = await cli('doctor', '--store', dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`${run.id}: damaged: .*snapshot\\.json: missing, though run\\.json records 1 completed iterations and checkpoint\\.bin exists`));
    expect(r.out).toContain('--rebuild');
    expect(await tree(run.dir)).toEqual(before);
    const resume = await cli('train', '--store', dir, '--resume', run.id);
    expect(resume.code).toBe(1);
    expect(resume.err).toMatch(/snapshot\.json: missing/);
    const exported = await cli('export', '--store', dir, '--run', run.id, '--format', 'jsonl', '--out', join(dir, 'out.jsonl'));
    expect(exported.code).toBe(1);
    expect(exported.err).toMatch(/snapshot\.json: missing/);
    const runs = await cli('runs', '--store', dir);
    expect(runs.out).toMatch(new RegExp(`${run.id}\\s+-\\s+-\\s+corrupt\\s+-\\s+.*snapshot\\.json: missing`));
    expect(await tree(run.dir)).toEqual(before);

    // --dry-run says what --rebuild would do and changes nothing.
    const dry = await cli('doctor', '--store', dir, '--rebuild', run.id, '--dry-run');
    expect(dry.out).toContain(`${run.id}: would rebuild its snapshot.json`);
    expect(await tree(run.dir)).toEqual(before);

    const rebuilt = await cli('doctor', '--store', dir, '--rebuild', run.id);
    expect(rebuilt.code, rebuilt.out).toBe(0);
    expect(rebuilt.out).toMatch(new RegExp(`${run.id}: rebuilt snapshot\\.json: 2 tasks and 2 trajectories \\(${Buffer.byteLength(committed)} bytes of rollouts\\.jsonl\\) committed; left out 1 line \\(line 5: incomplete`));
    // The original, incomplete line included, is kept byte for byte.
    const kept = (await readdir(run.dir)).find((f) => f.startsWith('rollouts.before-rebuild-'));
    expect(kept).toBeDefined();
    expect(await readFile(join(run.dir, kept as string), 'utf8')).toBe(`${committed}{"v":1,"type":"trajectory","traj`);
    expect(await readFile(rolloutsFile, 'utf8')).toBe(committed);
    // A consistent run: doctor finds it ok, export reads every committed line, runs lists it; resuming is refused with why.
    expect((await cli('doctor', '--store', dir)).out).toContain(`${run.id}: ok`);
    const out = join(dir, 'export.jsonl');
    const ex = await cli('export', '--store', dir, '--run', run.id, '--format', 'jsonl', '--out', out);
    expect(ex.code, ex.err).toBe(0);
    expect(await readFile(out, 'utf8')).toBe(committed);
    expect((await cli('runs', '--store', dir)).out).toMatch(new RegExp(`${run.id}\\s+shop\\s+dreamgym\\s+running|${run.id}\\s+shop\\s+dreamgym\\s+stopped`));
    const again = await cli('train', '--store', dir, '--resume', run.id);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/was rebuilt after its snapshot\.json was lost/);
  });
});
