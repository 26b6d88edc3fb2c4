/**
 * The curriculum as the inspector shows it: every task of a run in lineage order (a generated
 * task right under its parent, indented by its depth), with its generation, how many stored
 * episodes it has, their mean reward and reward variance, and the V_tau the loop last scored it
 * with (generated tasks; the loop keeps that for the tasks it may retire).
 */
import type { TaskRecord } from '../../replay/index.ts';

/** One row of the curriculum list. */
export interface CurriculumRow {
  id: string;
  instruction: string;
  origin: 'seed' | 'generated';
  split: 'train' | 'test';
  parentId: string | null;
  generation: number;
  /** Nesting depth in the displayed tree (0 for a root). */
  depth: number;
  /** Stored episodes of the task (all sources). */
  episodes: number;
  /** Mean reward and reward variance over those episodes (null without episodes). */
  meanReward: number | null;
  rewardVariance: number | null;
  /** V_tau of the task's last scored group in the loop (null when never scored). */
  vTau: number | null;
  /** The iteration of that score. */
  scoredAt: number | null;
}

/** Rows in depth-first lineage order: roots by insertion order, each followed by its descendants. */
export function buildCurriculum(tasks: readonly TaskRecord[], lastSeen: Readonly<Record<string, { iteration: number; vTau: number }>> = {}): CurriculumRow[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const children = new Map<string, TaskRecord[]>();
  const roots: TaskRecord[] = [];
  for (const t of [...tasks].sort((a, b) => a.seq - b.seq)) {
    // A parent that is not stored (evicted, or never written) makes its child a root.
    if (t.parentId && byId.has(t.parentId) && t.parentId !== t.id) {
      const list = children.get(t.parentId) ?? [];
      list.push(t);
      children.set(t.parentId, list);
    } else {
      roots.push(t);
    }
  }
  const rows: CurriculumRow[] = [];
  const seen = new Set<string>();
  const visit = (t: TaskRecord, depth: number): void => {
    // Guards against a lineage cycle in corrupt data.
    if (seen.has(t.id)) return;
    seen.add(t.id);
    const { count, rewardSum, rewardSumSq } = t.stats;
    const mean = count > 0 ? rewardSum / count : null;
    const scored = lastSeen[t.id];
    rows.push({
      id: t.id,
      instruction: t.task.instruction,
      origin: t.origin,
      split: t.task.split,
      parentId: t.parentId ?? null,
      generation: t.generation,
      depth,
      episodes: count,
      meanReward: mean,
      // Population variance, as V_tau is defined; clamped against rounding below zero.
      rewardVariance: mean === null ? null : Math.max(0, rewardSumSq / count - mean * mean),
      vTau: scored && Number.isFinite(scored.vTau) ? scored.vTau : null,
      scoredAt: scored && Number.isFinite(scored.vTau) ? scored.iteration : null,
    });
    for (const child of children.get(t.id) ?? []) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  // Tasks only reachable through a cycle are still listed.
  for (const t of tasks) if (!seen.has(t.id)) visit(t, 0);
  return rows;
}
