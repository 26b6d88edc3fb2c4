/**
 * The replay store in Node (CLI, node tests): IndexedDB comes from fake-indexeddb (in memory).
 * idb needs the IndexedDB classes as globals; this module installs fake-indexeddb's when the
 * runtime has none. Not for the browser bundle.
 */
import {
  IDBCursor,
  IDBCursorWithValue,
  IDBDatabase,
  IDBFactory,
  IDBIndex,
  IDBKeyRange,
  IDBObjectStore,
  IDBOpenDBRequest,
  IDBRequest,
  IDBTransaction,
  IDBVersionChangeEvent,
} from 'fake-indexeddb';
import { openReplayStore, type ReplayStore } from './store.ts';
import type { OpenReplayStoreOptions } from './types.ts';

/** Installs fake-indexeddb's IndexedDB classes as globals where none exist. Idempotent. */
export function installIdbGlobals(): void {
  const g = globalThis as Record<string, unknown>;
  const classes: Record<string, unknown> = {
    IDBCursor,
    IDBCursorWithValue,
    IDBDatabase,
    IDBFactory,
    IDBIndex,
    IDBKeyRange,
    IDBObjectStore,
    IDBOpenDBRequest,
    IDBRequest,
    IDBTransaction,
    IDBVersionChangeEvent,
  };
  for (const [name, value] of Object.entries(classes)) {
    if (g[name] === undefined) Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

/** A fresh, empty in-memory IndexedDB (each call is independent). */
export function createMemoryIndexedDB(): IDBFactory {
  installIdbGlobals();
  return new IDBFactory();
}

/**
 * Opens a replay store over fake-indexeddb. Without `options.indexedDB`, each call gets a fresh
 * in-memory database factory.
 */
export async function openNodeReplayStore(options: OpenReplayStoreOptions = {}): Promise<ReplayStore> {
  installIdbGlobals();
  return openReplayStore({ ...options, indexedDB: options.indexedDB ?? new IDBFactory() });
}
