import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { taskLine, trajectoryLine } from '../core/jsonl.ts';
import type { Trajectory } from '../core/types.ts';
import { generateOfflineData, summarise, type OfflineDataOptions, type OfflineDataSummary } from '../envs/offline.ts';
import type { EnvSpec } from '../envs/spec.ts';
import { createProgress } from './progress.ts';

/**
 * Writes `{task, trajectory}` lines for `options.episodes` episodes to `out` and returns the
 * summary. Writes to a temporary file first and renames it, so a failed run never leaves a
 * truncated dataset behind.
 */
export async function writeOfflineData(spec: EnvSpec, options: OfflineDataOptions, out: string): Promise<OfflineDataSummary> {
  const tmp = `${out}.partial-${process.pid}`;
  const stream = createWriteStream(tmp, { encoding: 'utf8' });
  const opened = once(stream, 'open');
  const failed = once(stream, 'error').then(([err]) => {
    throw err as Error;
  });
  try {
    await Promise.race([opened, failed]);
  } catch (err) {
    // Name the file asked for, not the temporary one Node failed to open.
    throw fileError('write', out, err);
  }
  const progress = createProgress(`${spec.name} ${options.policy}`, options.episodes);
  const trajectories: Trajectory[] = [];
  try {
    let done = 0;
    for (const { task, trajectory } of generateOfflineData(spec, options)) {
      // Respect back-pressure so large runs do not buffer the whole file in memory.
      if (!stream.write(`${taskLine(task)}\n${trajectoryLine(trajectory)}\n`)) {
        await Promise.race([once(stream, 'drain'), failed]);
      }
      trajectories.push(trajectory);
      progress.update(++done);
    }
    stream.end();
    await Promise.race([once(stream, 'finish'), failed]);
    await rename(tmp, out);
  } catch (err) {
    stream.destroy();
    await rm(tmp, { force: true });
    throw err;
  } finally {
    progress.stop();
  }
  return summarise(trajectories);
}

/** An error saying which file could not be read or written, and why (Node's text without its own path). */
export function fileError(what: 'read' | 'write', file: string, err: unknown): Error {
  const why = err instanceof Error ? err.message.replace(/, \w+ '[^']*'$/, '') : String(err);
  return new Error(`cannot ${what} ${file}: ${why}`, { cause: err });
}
