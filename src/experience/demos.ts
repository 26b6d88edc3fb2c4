/**
 * Retrieval of demonstrations for the LLM experience model where there is no IndexedDB replay
 * store (the Node CLI): the real transitions of a run's offline data, keyed by an embedding of
 * (state, action), searched by exact top-k cosine similarity. The page gets the same from its
 * replay buffer.
 *
 * Only what an agent saw is kept (states, actions, outcomes); tasks' goals are never read.
 */
import { transitionText, type Embedder } from '../core/embedding.ts';
import type { Observation, Trajectory } from '../core/types.ts';
import { RetrievalIndex } from '../replay/retrieval.ts';
import type { Demonstration } from './types.ts';

/** What the next state of a final step reads (the episode has no next state). */
const EPISODE_OVER = 'The episode is over.';

/** Top-k real transitions for (observation, action), from a fixed set of trajectories. */
export class DemonstrationIndex {
  private constructor(
    private readonly embedder: Embedder,
    private readonly index: RetrievalIndex,
    private readonly demos: readonly Demonstration[],
  ) {}

  /** Indexes every step of `trajectories` (one embedding per step). */
  static async fromTrajectories(trajectories: readonly Trajectory[], embedder: Embedder): Promise<DemonstrationIndex> {
    const demos: Demonstration[] = [];
    for (const t of trajectories) {
      t.steps.forEach((step, i) => {
        const next = t.steps[i + 1]?.observation;
        demos.push({
          state: step.observation.text,
          action: step.action,
          nextState: next?.text ?? (step.done ? EPISODE_OVER : step.observation.text),
          nextActions: next ? [...next.actions] : [],
          reward: step.reward,
          done: step.done,
          valid: step.valid,
        });
      });
    }
    const index = new RetrievalIndex(embedder.dim);
    index.reserve(demos.length);
    const batch = 256;
    for (let from = 0; from < demos.length; from += batch) {
      const part = demos.slice(from, from + batch);
      const vectors = await embedder.embed(part.map((d) => transitionText(d.state, d.action)));
      vectors.forEach((vector, j) => index.add({ seq: from + j, source: 'offline', taskId: '', vector }));
    }
    return new DemonstrationIndex(embedder, index, demos);
  }

  /** How many transitions are indexed. */
  get size(): number {
    return this.demos.length;
  }

  /** The `k` transitions most similar to (observation, action), best first, with their scores. */
  async top(observation: Observation, action: string, k: number): Promise<Demonstration[]> {
    if (k <= 0 || this.demos.length === 0) return [];
    const [query] = await this.embedder.embed([transitionText(observation.text, action)]);
    if (!query) return [];
    const [hits = []] = this.index.search([query], k);
    return hits.map((h) => ({ ...(this.demos[h.seq] as Demonstration), score: h.score }));
  }
}
