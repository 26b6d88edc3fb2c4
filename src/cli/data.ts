import { taskLine, trajectoryLine } from '../core/jsonl.ts';
import { generateOfflineData, SummaryTally, type OfflineDataOptions, type OfflineDataSummary } from '../envs/offline.ts';
import type { AnyEnvSpec } from '../envs/spec.ts';
import { openOutput, type OutputTarget } from './output.ts';
import { createProgress } from './progress.ts';

/** Bytes gathered before one write: few system calls, and memory that does not grow with the run. */
const CHUNK_BYTES = 1 << 16;

/**
 * Writes `{task, trajectory}` lines for `options.episodes` episodes to `target` (checked before
 * with `resolveOutput`) and returns the summary. Streams: each episode is generated, written and
 * counted, then dropped, so memory does not grow with `episodes`. A regular file is written to a
 * temporary file and renamed at the end, so a failed or interrupted run leaves no truncated
 * dataset and no temporary file (see src/cli/output.ts).
 */
export async function writeOfflineData(spec: AnyEnvSpec, options: OfflineDataOptions, target: OutputTarget): Promise<OfflineDataSummary> {
  const writer = await openOutput(target);
  const progress = createProgress(`${spec.name} ${options.policy}`, options.episodes);
  const tally = new SummaryTally();
  try {
    let done = 0;
    let chunk = '';
    for (const { task, trajectory } of generateOfflineData(spec, options)) {
      chunk += `${taskLine(task)}\n${trajectoryLine(trajectory)}\n`;
      tally.add(trajectory);
      if (chunk.length >= CHUNK_BYTES) {
        await writer.write(chunk);
        chunk = '';
      }
      progress.update(++done);
    }
    if (chunk.length > 0) await writer.write(chunk);
    await writer.commit();
  } catch (err) {
    await writer.abort();
    throw err;
  } finally {
    progress.stop();
  }
  return tally.summary();
}

/** An error saying which file could not be read or written, and why (Node's text without its own path). */
export function fileError(what: 'read' | 'write', file: string, err: unknown): Error {
  const why = err instanceof Error ? err.message.replace(/, \w+ '[^']*'$/, '') : String(err);
  return new Error(`cannot ${what} ${file}: ${why}`, { cause: err });
}
