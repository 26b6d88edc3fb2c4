/**
 * The typed side channel between the page and `workers/llm.worker.ts`, next to WebLLM's own
 * worker protocol. WebLLM's client throws on message kinds it does not know, so ours travel on
 * a `MessagePort` handed over once with a `dreamgym:connect` message.
 */
import type { LabelLogitRequest, LabelLogitSource } from './logits.ts';
import { LLMRequestError } from './errors.ts';

/** The message kind that hands the worker its side-channel port. */
export const CONNECT_KIND = 'dreamgym:connect';

/** Requests on the side channel. */
export type SideRequest =
  | { id: number; kind: 'ping' }
  | { id: number; kind: 'configure'; captureModels: string[] }
  | { id: number; kind: 'label-logits'; request: LabelLogitRequest; labels: string[] };

/** What each request kind resolves to. */
export interface SideResults {
  ping: { engine: 'webllm' | 'injected' };
  configure: { captureModels: string[] };
  'label-logits': Float32Array;
}

/** Replies on the side channel. */
export type SideResponse =
  | { id: number; ok: true; result: SideResults[keyof SideResults] }
  | { id: number; ok: false; error: { name: string; message: string } };

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void };

/** A request without its id. */
type Body<K extends SideRequest['kind']> = Omit<Extract<SideRequest, { kind: K }>, 'id'>;

/** The error a side-channel request failed with, re-created on this side with its name. */
export class WorkerSideError extends LLMRequestError {
  constructor(
    readonly remoteName: string,
    message: string,
  ) {
    super(`${remoteName}: ${message}`);
    this.name = 'WorkerSideError';
  }
}

/** The page's end of the side channel. */
export class SideChannelClient implements LabelLogitSource {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closed = false;

  constructor(private readonly port: MessagePort) {
    port.onmessage = (event: MessageEvent<SideResponse>) => {
      const msg = event.data;
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.ok) waiter.resolve(msg.result);
      else waiter.reject(new WorkerSideError(msg.error.name, msg.error.message));
    };
    port.start();
  }

  /** Creates the channel, hands one end to `worker`, returns the other. */
  static connect(worker: Pick<Worker, 'postMessage'>): SideChannelClient {
    const channel = new MessageChannel();
    worker.postMessage({ kind: CONNECT_KIND }, [channel.port2]);
    return new SideChannelClient(channel.port1);
  }

  /** Sends a request and waits for its reply. */
  request<K extends SideRequest['kind']>(body: Body<K>): Promise<SideResults[K]> {
    if (this.closed) return Promise.reject(new LLMRequestError('the LLM worker side channel is closed'));
    const id = this.nextId++;
    return new Promise<SideResults[K]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.port.postMessage({ ...body, id });
    });
  }

  labelLogits(request: LabelLogitRequest, labels: readonly string[]): Promise<Float32Array> {
    return this.request<'label-logits'>({ kind: 'label-logits', request, labels: [...labels] });
  }

  /** Rejects every pending request and closes the port. */
  close(): void {
    this.closed = true;
    for (const waiter of this.pending.values()) waiter.reject(new LLMRequestError('the LLM worker was terminated'));
    this.pending.clear();
    this.port.close();
  }
}

/** The worker's end: answers requests with `handlers`. */
export function serveSideChannel(
  port: MessagePort,
  handlers: { [K in SideRequest['kind']]: (request: Extract<SideRequest, { kind: K }>) => Promise<SideResults[K]> },
): void {
  port.onmessage = async (event: MessageEvent<SideRequest>) => {
    const msg = event.data;
    let reply: SideResponse;
    try {
      const handler = handlers[msg.kind] as (request: SideRequest) => Promise<SideResults[keyof SideResults]>;
      if (typeof handler !== 'function') throw new Error(`unknown side-channel request kind ${JSON.stringify(msg.kind)}`);
      reply = { id: msg.id, ok: true, result: await handler(msg) };
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      reply = { id: msg.id, ok: false, error: { name: e.name, message: e.message } };
    }
    port.postMessage(reply);
  };
  port.start();
}
