/**
 * Opening the replay database with an injected IDBFactory, upgrades, and the `blocked` /
 * `versionchange` handshake between an old tab and a new one:
 * - the connection that is in the way (`versionchange`) closes itself and reports it;
 * - the connection that waits (`blocked`) reports it and gives up with `DatabaseBlockedError`
 *   after a timeout instead of hanging forever (if it opens later, it closes at once).
 */
import { wrap, type IDBPDatabase, type IDBPTransaction } from 'idb';
import { DatabaseBlockedError, ReplayError, SchemaTooNewError, toReplayError } from './errors.ts';
import { upgradeDatabase, type ReplayDB, type ReplayStoreName } from './schema.ts';

/** Versions involved in a blocked open or a version change. */
export interface VersionChangeInfo {
  oldVersion: number;
  newVersion: number | null;
}

export interface OpenDatabaseOptions {
  /** Give up on a blocked open after this long (ms). */
  blockedTimeoutMs: number;
  /** Called when the open waits for other connections to close. */
  onBlocked?: (info: VersionChangeInfo) => void;
}

/**
 * Checks that the IndexedDB classes idb relies on exist as globals (in Node they come from
 * fake-indexeddb; see `src/replay/node.ts`).
 */
export function assertIdbGlobals(): void {
  const g = globalThis as Record<string, unknown>;
  const missing = ['IDBRequest', 'IDBObjectStore', 'IDBIndex', 'IDBCursor', 'IDBDatabase', 'IDBTransaction', 'IDBKeyRange'].filter(
    (name) => typeof g[name] !== 'function',
  );
  if (missing.length > 0) {
    throw new ReplayError(
      `IndexedDB globals missing (${missing.join(', ')}): in Node, import 'fake-indexeddb/auto' or open the store through src/replay/node.ts`,
    );
  }
}

/** Opens (creating or upgrading) the database at `version`. */
export function openDatabase(factory: IDBFactory, name: string, version: number, options: OpenDatabaseOptions): Promise<IDBPDatabase<ReplayDB>> {
  return new Promise((resolve, reject) => {
    let request: IDBOpenDBRequest;
    try {
      request = factory.open(name, version);
    } catch (err) {
      reject(toReplayError(`opening database ${JSON.stringify(name)}`, err));
      return;
    }
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let upgradeError: unknown;

    request.onupgradeneeded = (event) => {
      const db = wrap(request.result) as unknown as IDBPDatabase<ReplayDB>;
      const tx = wrap(request.transaction as IDBTransaction) as unknown as IDBPTransaction<ReplayDB, ReplayStoreName[], 'versionchange'>;
      upgradeDatabase(db, tx, event.oldVersion, event.newVersion ?? version).catch((err: unknown) => {
        upgradeError = err;
        try {
          request.transaction?.abort();
        } catch {
          // Already finished: the open's error event reports the failure.
        }
      });
    };
    request.onblocked = (event) => {
      options.onBlocked?.({ oldVersion: event.oldVersion, newVersion: event.newVersion });
      if (timer === undefined && !settled) {
        timer = setTimeout(() => {
          if (settled) return;
          settled = true;
          reject(new DatabaseBlockedError(name, version, options.blockedTimeoutMs));
        }, options.blockedTimeoutMs);
      }
    };
    request.onsuccess = () => {
      clearTimeout(timer);
      const db = request.result;
      if (settled) {
        // We gave up waiting; do not keep a connection nobody will use.
        db.close();
        return;
      }
      settled = true;
      resolve(wrap(db) as unknown as IDBPDatabase<ReplayDB>);
    };
    request.onerror = (event) => {
      clearTimeout(timer);
      event.preventDefault();
      if (settled) return;
      settled = true;
      const err = upgradeError ?? request.error;
      if ((err as { name?: unknown } | null)?.name === 'VersionError') reject(new SchemaTooNewError(name, version, err));
      else reject(toReplayError(`opening database ${JSON.stringify(name)} at version ${version}`, err));
    };
  });
}
