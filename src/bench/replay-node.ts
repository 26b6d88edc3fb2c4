/**
 * The CLI suite `replay`: the replay benchmark (src/bench/replay.ts) in Node over fake-indexeddb
 * (in memory: not a browser figure). Node only.
 */
import { createMemoryIndexedDB } from '../replay/node.ts';
import { benchReplay, type ReplayBenchRow, type ReplayBenchSizes } from './replay.ts';

const log = (line: string): void => void process.stderr.write(`  ${line}\n`);

/** The replay benchmark in Node over fake-indexeddb. */
export async function benchReplayNode(sizes: ReplayBenchSizes = {}): Promise<ReplayBenchRow[]> {
  return benchReplay({ ...sizes, indexedDB: createMemoryIndexedDB(), label: 'node/fake-indexeddb', log });
}
