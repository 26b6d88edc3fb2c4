/**
 * Text embeddings: features for the policy head and keys for replay-buffer retrieval.
 * Implementations: a hashed n-gram embedder (no download) and WebLLM's embedding model.
 */
export interface Embedder {
  /** Identifies the model (and its settings); embeddings from different ids are not comparable. */
  readonly id: string;
  /** Length of every vector. */
  readonly dim: number;
  /** One L2-normalised vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/** The text that keys a transition for retrieval: the state and the action taken in it. */
export function transitionText(state: string, action: string): string {
  return `${state}\n>> ${action}`;
}
