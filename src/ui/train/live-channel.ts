/**
 * Live progress of a run for other tabs: the tab whose worker trains a run re-sends the worker's
 * events over a BroadcastChannel named after the page's run index, and a tab that found the run
 * locked by another (Web Locks guard one trainer per run) shows them read-only.
 */
import type { StorageNames, TrainingEvent } from '../../../workers/training.protocol.ts';
import { DEFAULT_RUN_INDEX_NAME } from '../../train/runs/records.ts';

/** The channel name for the page's storage (tabs with the same run index share it). */
export function liveChannelName(storage: StorageNames = {}): string {
  return `dreamgym-training:${storage.index ?? DEFAULT_RUN_INDEX_NAME}`;
}

/** Whether other tabs care about an event: the backend report describes this tab's worker only. */
export function isSharedEvent(event: TrainingEvent): boolean {
  return event.kind !== 'backend';
}

/** The two ends of the live channel (one object; a tab both sends and listens). */
export interface LiveChannel {
  /** Sends one of this tab's worker events to the other tabs. */
  publish(event: TrainingEvent): void;
  /** Listens to the other tabs' events; returns the remover. */
  subscribe(listener: (event: TrainingEvent) => void): () => void;
  close(): void;
}

/** Opens the live channel, or a silent stand-in where there is no BroadcastChannel. */
export function openLiveChannel(storage: StorageNames = {}): LiveChannel {
  const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
  const channel = Channel ? new Channel(liveChannelName(storage)) : null;
  const listeners = new Set<(event: TrainingEvent) => void>();
  if (channel) {
    channel.onmessage = (message: MessageEvent<unknown>) => {
      const event = message.data as TrainingEvent | null;
      // Only well-formed events of the protocol: the channel name is public to every script of the origin.
      if (!event || typeof event !== 'object' || typeof (event as { kind?: unknown }).kind !== 'string') return;
      for (const listener of listeners) listener(event);
    };
  }
  return {
    publish(event) {
      if (!isSharedEvent(event)) return;
      try {
        channel?.postMessage(event);
      } catch {
        // A closed channel (page going away) must not break the training view.
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    close() {
      listeners.clear();
      channel?.close();
    },
  };
}
