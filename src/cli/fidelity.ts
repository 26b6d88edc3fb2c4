import type { AnyEnvSpec } from '../envs/spec.ts';
import { useFastestNodeBackend } from './tf-node.ts';
import { FIDELITY_MEASURES, fidelityMargin, measureFidelityTable, type FidelityTable } from '../train/fidelity.ts';
import type { RunLLM } from '../train/setup.ts';
import { MIN_SUCCESS_PRECISION } from '../experience/retrieval/grounding.ts';

/** Runs a fidelity measurement for the CLI on the fastest tfjs backend Node has (`llm`: the LLM experience model on that server). */
export async function runFidelity(
  spec: AnyEnvSpec,
  opts: { sim: 'retrieval' | 'llm'; trainEpisodes: number; testEpisodes: number; seed: number; policy: string; falseSuccessEpisodes?: number; llm?: RunLLM | null },
): Promise<FidelityTable & { backend: string }> {
  const backend = await useFastestNodeBackend();
  const { sim: _sim, ...rest } = opts;
  const table = await measureFidelityTable(spec, rest);
  return { ...table, backend };
}

/** Kinds of action listed in the next-state breakdown. */
const KINDS_SHOWN = 15;

const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a');

/** A human-readable report: the model next to the baselines with its margin, then false-success rates. */
export function formatFidelity(t: FidelityTable & { backend: string }): string {
  const [model] = t.rows;
  if (!model) return 'no figures\n';
  const width = Math.max('measure'.length, ...FIDELITY_MEASURES.map(([, label]) => label.length));
  const head = ['measure'.padEnd(width), ...t.rows.map((r) => r.sim.padStart(10)), 'margin'.padStart(9)].join(' ');
  const lines = [
    `${t.env}: ${model.sim} built from ${model.trainEpisodes} train episodes (${model.trainTransitions} valid transitions), measured on ${model.testEpisodes} held-out test episodes (${model.testTransitions} transitions)`,
    head,
  ];
  for (const [key, label] of FIDELITY_MEASURES) {
    const margin = fidelityMargin(t.rows, key);
    const m = Number.isFinite(margin) ? `${margin >= 0 ? '+' : ''}${(100 * margin).toFixed(1)}` : 'n/a';
    lines.push([label.padEnd(width), ...t.rows.map((r) => pct(r[key]).padStart(10)), m.padStart(9)].join(' '));
  }
  lines.push(`  (consistency measured on ${model.consistencyPairs} repeats whose real outcome was the same)`);
  const kinds = model.nextStateByKind.slice(0, KINDS_SHOWN);
  if (kinds.length > 0) {
    const kindWidth = Math.max('kind of action'.length, ...kinds.map((k) => k.kind.length));
    lines.push('', `next-state match of the ${model.sim} model by kind of action (the ${kinds.length} most frequent; "again": taken before in the episode):`, `${'kind of action'.padEnd(kindWidth)} ${'steps'.padStart(6)} ${'match'.padStart(7)}`);
    for (const k of kinds) lines.push(`${k.kind.padEnd(kindWidth)} ${String(k.steps).padStart(6)} ${pct(k.match).padStart(7)}`);
  }
  if (t.falseSuccess.length > 0) {
    lines.push('', 'success inside the simulator vs the real environment:', `${'policy'.padEnd(16)} ${'tasks'.padEnd(9)} ${'task type'.padEnd(22)} ${'n'.padStart(4)} ${'sim'.padStart(7)} ${'real'.padStart(7)}`);
    for (const r of t.falseSuccess) {
      lines.push(`${r.policy.padEnd(16)} ${r.tasks.padEnd(9)} ${r.taskType.padEnd(22)} ${String(r.episodes).padStart(4)} ${pct(r.simSuccess).padStart(7)} ${pct(r.realSuccess).padStart(7)}`);
    }
  }
  const g = t.grounding;
  if (g) {
    lines.push(
      '',
      `grounding (cross-fitted on ${g.folds} folds of the train episodes, ${g.heldOutSteps} held-out steps, ${pct(g.heldOutRight)} predicted right): doubtful below support ${g.threshold.toFixed(3)} (${pct(g.heldOutDoubtful)} of held-out steps go on with a penalty), unknown (halting) below ${g.haltThreshold.toFixed(3)} (${pct(g.heldOutUnknown)}), halting reward ${g.haltPenalty.toFixed(3)}`,
      Number.isFinite(g.success.threshold)
        ? `evidence-bound success (similarity to recorded successes >= ${g.success.threshold.toFixed(3)}): precision ${pct(g.success.precision)} on ${g.success.granted} granted, recall ${pct(g.success.recall)} of ${g.success.successes} held-out recorded successes`
        : `evidence-bound success: none granted (no similarity to recorded successes made ${pct(MIN_SUCCESS_PRECISION)} of the granted ones real; ${g.success.successes} held-out recorded successes)`,
      `${'evidence used'.padEnd(14)} ${'steps'.padStart(6)} ${'right'.padStart(7)} ${'unknown'.padStart(8)}`,
      ...g.bySource.map((b) => `${b.source.padEnd(14)} ${String(b.steps).padStart(6)} ${pct(b.right).padStart(7)} ${pct(b.unknown).padStart(8)}`),
    );
  }
  lines.push(`${(t.ms / 1000).toFixed(1)} s on tfjs ${t.backend}`, '');
  return lines.join('\n');
}
