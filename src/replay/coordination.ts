/**
 * Coordination between contexts (tabs, windows, workers) that share the replay database:
 * - one trainer per run, enforced with a Web Lock (`navigator.locks`); in Node, where there is
 *   no `navigator.locks`, an in-process lock manager with the same semantics stands in;
 * - change notifications over a BroadcastChannel (the page's charts listen to them).
 */
import type { TrajectorySource } from '../core/types.ts';
import { RunLockedError } from './errors.ts';

/** The part of the Web Locks API the store uses (`navigator.locks` satisfies it). */
export interface LockManagerLike {
  request(name: string, options: { ifAvailable?: boolean; mode?: 'exclusive' }, callback: (lock: { name: string } | null) => unknown): Promise<unknown>;
  query?(): Promise<{ held?: { name?: string }[] }>;
}

/**
 * Exclusive named locks shared by every store in this JavaScript realm: what `navigator.locks`
 * provides across contexts, for runtimes without it (Node). Locks are released when the
 * callback's promise settles.
 */
export class InProcessLockManager implements LockManagerLike {
  private readonly held = new Set<string>();
  private readonly waiting = new Map<string, (() => void)[]>();

  async request(name: string, options: { ifAvailable?: boolean; mode?: 'exclusive' }, callback: (lock: { name: string } | null) => unknown): Promise<unknown> {
    if (typeof name !== 'string' || name === '') throw new TypeError(`lock name must be a non-empty string, got ${JSON.stringify(name)}`);
    if (options.mode !== undefined && options.mode !== 'exclusive') throw new RangeError(`only exclusive locks are supported, got mode ${JSON.stringify(options.mode)}`);
    if (this.held.has(name)) {
      if (options.ifAvailable) return await callback(null);
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(name) ?? [];
        queue.push(resolve);
        this.waiting.set(name, queue);
      });
    }
    this.held.add(name);
    try {
      return await callback({ name });
    } finally {
      const next = this.waiting.get(name)?.shift();
      if (next) next();
      else {
        this.held.delete(name);
        this.waiting.delete(name);
      }
    }
  }

  async query(): Promise<{ held: { name: string }[] }> {
    return { held: [...this.held].map((name) => ({ name })) };
  }
}

/** The lock manager used when none is injected and `navigator.locks` is missing. */
const inProcessLocks = new InProcessLockManager();

/** `navigator.locks` when present, else the in-process manager. */
export function defaultLockManager(): LockManagerLike {
  const nav = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator;
  return nav?.locks ?? inProcessLocks;
}

/** A held run lock. Release it when training stops; it is also released when the context ends. */
export interface RunLock {
  readonly runId: string;
  /** The Web Lock's name. */
  readonly name: string;
  /** Whether `release` has been called. */
  readonly released: boolean;
  /** Releases the lock (idempotent). */
  release(): Promise<void>;
}

/** The Web Lock name of a run in a database. */
export function runLockName(database: string, runId: string): string {
  return `dreamgym-replay:${database}:run:${runId}`;
}

/**
 * Takes the run's lock if nobody holds it, else throws `RunLockedError` at once
 * ("this run is being trained elsewhere").
 */
export async function acquireRunLock(locks: LockManagerLike, database: string, runId: string): Promise<RunLock> {
  const name = runLockName(database, runId);
  let releaseHold: () => void = () => undefined;
  const hold = new Promise<void>((resolve) => (releaseHold = resolve));
  const granted = await new Promise<boolean>((resolve, reject) => {
    locks
      .request(name, { ifAvailable: true, mode: 'exclusive' }, async (lock) => {
        if (lock === null) {
          resolve(false);
          return;
        }
        resolve(true);
        await hold;
      })
      .catch(reject);
  });
  if (!granted) throw new RunLockedError(runId);
  let released = false;
  return {
    runId,
    name,
    get released() {
      return released;
    },
    async release() {
      if (released) return;
      released = true;
      releaseHold();
      // Let the lock manager process the release before the caller continues.
      await Promise.resolve();
    },
  };
}

/** Whether some context holds the run's lock (false when the lock manager cannot say). */
export async function isRunLocked(locks: LockManagerLike, database: string, runId: string): Promise<boolean> {
  if (!locks.query) return false;
  const snapshot = await locks.query();
  const name = runLockName(database, runId);
  return (snapshot.held ?? []).some((l) => l.name === name);
}

/** What changed in the replay database. Sent to other contexts and delivered to local listeners. */
export type ReplayChange =
  | { type: 'run-created'; runId: string }
  | { type: 'run-deleted'; runId: string }
  | { type: 'tasks-put'; runId: string; taskIds: string[] }
  | { type: 'tasks-deleted'; runId: string; taskIds: string[] }
  | {
      type: 'trajectories-added';
      runId: string;
      trajectoryIds: string[];
      /** New transitions per source. */
      transitions: Partial<Record<TrajectorySource, number>>;
      /** Seqs of the new transitions, as inclusive [from, to] ranges. */
      seqRanges: [number, number][];
    }
  | {
      type: 'trajectories-removed';
      runId: string;
      trajectoryIds: string[];
      transitions: number;
      reason: 'evicted' | 'deleted';
      /** Seqs of the removed transitions, as inclusive [from, to] ranges. */
      seqRanges: [number, number][];
    }
  | { type: 'checkpoint-saved'; runId: string; name: string; iteration: number }
  | { type: 'metrics-appended'; runId: string; iterations: number[] }
  /** `repairStore` removed corrupt records of the run or rebuilt its counters: reload what is cached. */
  | { type: 'run-repaired'; runId: string };

/** A change as delivered: `local` when this store made it, `remote` when another context did. */
export type ReplayEvent = ReplayChange & { origin: 'local' | 'remote' };

/** Receives change events. */
export type ReplayListener = (event: ReplayEvent) => void;

interface Envelope {
  sender: string;
  change: ReplayChange;
}

/** The BroadcastChannel name of a database. */
export function channelName(database: string): string {
  return `dreamgym-replay:${database}`;
}

/**
 * Fans change events out to local listeners and, over a BroadcastChannel, to other contexts
 * (tabs, workers) that opened the same database.
 */
export class ChangeNotifier {
  private readonly listeners = new Set<ReplayListener>();
  private readonly channel: BroadcastChannel | null;
  private readonly sender = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

  constructor(database: string, enabled: boolean, onRemote: (change: ReplayChange) => void) {
    const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
    this.channel = enabled && Channel ? new Channel(channelName(database)) : null;
    if (this.channel) {
      this.channel.onmessage = (message: MessageEvent<unknown>) => {
        const envelope = message.data as Envelope | undefined;
        if (!envelope || typeof envelope !== 'object' || envelope.sender === this.sender || !envelope.change) return;
        onRemote(envelope.change);
        this.deliver({ ...envelope.change, origin: 'remote' });
      };
      // Node: do not keep the process alive just for this channel.
      (this.channel as { unref?: () => void }).unref?.();
    }
  }

  /** Adds a listener; returns its remover. */
  subscribe(listener: ReplayListener): () => void {
    if (typeof listener !== 'function') throw new TypeError(`listener must be a function, got ${typeof listener}`);
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Announces a change made by this store. */
  publish(change: ReplayChange): void {
    try {
      this.channel?.postMessage({ sender: this.sender, change } satisfies Envelope);
    } catch {
      // A closed channel (store closing) must not fail the write that already committed.
    }
    this.deliver({ ...change, origin: 'local' });
  }

  private deliver(event: ReplayEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        // A broken listener must not break the store or the other listeners.
        console.error('dreamgym replay: a change listener threw', err);
      }
    }
  }

  close(): void {
    this.listeners.clear();
    this.channel?.close();
  }
}
