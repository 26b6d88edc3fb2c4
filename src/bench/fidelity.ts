/**
 * Fidelity suite: the retrieval experience model next to the trivial simulators (echo, majority)
 * on held-out test-split episodes of both environments, with the model's margin over the best
 * baseline per measure, and the sim-vs-real success rates of a random policy, a noisy expert
 * (told what to do by a shadow real environment), and the noisy scripted reference and noisy
 * demonstrator (acting on what they are shown).
 */
import { ENV_NAMES } from '../core/types.ts';
import { getEnvSpec } from '../envs/registry.ts';
import { FIDELITY_MEASURES, fidelityMargin, measureFidelityTable } from '../train/fidelity.ts';
import type { BenchRow } from './types.ts';

/** Runs the suite on the tfjs backend already chosen by the caller (`backend` is reported). */
export async function benchFidelity(backend: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const name of ENV_NAMES) {
    const t = await measureFidelityTable(getEnvSpec(name), { trainEpisodes: 300, testEpisodes: 100, seed: 0, falseSuccessEpisodes: 100 });
    const [model] = t.rows;
    if (!model) continue;
    const note = `built from ${model.trainTransitions} real transitions, measured on ${model.testTransitions}`;
    for (const [key, label] of FIDELITY_MEASURES) {
      const others = t.rows
        .slice(1)
        .map((r) => `${r.sim} ${Number.isFinite(r[key]) ? (100 * r[key]).toFixed(1) : 'n/a'}`)
        .join(', ');
      const margin = fidelityMargin(t.rows, key);
      rows.push({
        name: `${name}: ${label}`,
        value: 100 * model[key],
        unit: '%',
        note: `${others}; margin ${Number.isFinite(margin) ? `${margin >= 0 ? '+' : ''}${(100 * margin).toFixed(1)} pts` : 'n/a'}${key === 'actionAgreement' ? `; ${note}` : ''}${key === 'consistency' ? `; ${model.consistencyPairs} repeats` : ''}`,
      });
    }
    // Per task type rows stay in `fidelity --json`; the table keeps each task group's total.
    for (const r of t.falseSuccess.filter((f) => f.taskType === 'all')) {
      rows.push({
        name: `${name}: ${r.policy} success inside the simulator, ${r.tasks} tasks, ${r.taskType}`,
        value: 100 * r.simSuccess,
        unit: '%',
        note: `real environment ${(100 * r.realSuccess).toFixed(1)}%, ${r.episodes} episodes`,
      });
    }
    rows.push({ name: `${name}: build + measure time`, value: t.ms / 1000, unit: 's', note: `tfjs ${backend}` });
  }
  return rows;
}
