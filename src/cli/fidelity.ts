import type { EnvSpec } from '../envs/spec.ts';
import { useFastestNodeBackend } from './tf-node.ts';
import { measureRetrievalFidelity, type FidelityReport } from '../train/fidelity.ts';

/** Runs a fidelity measurement for the CLI on the fastest tfjs backend Node has. */
export async function runFidelity(
  spec: EnvSpec,
  opts: { sim: 'retrieval'; trainEpisodes: number; testEpisodes: number; seed: number; policy: string },
): Promise<FidelityReport & { backend: string }> {
  const backend = await useFastestNodeBackend();
  const report = await measureRetrievalFidelity(spec, opts);
  return { ...report, backend };
}

const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a');

/** A short human-readable report. */
export function formatFidelity(r: FidelityReport & { backend: string }): string {
  return [
    `${r.env} / ${r.sim}: built from ${r.trainEpisodes} train episodes (${r.trainTransitions} valid transitions), measured on ${r.testEpisodes} test episodes (${r.testTransitions} transitions)`,
    `  admissible-action agreement (Jaccard)  ${pct(r.actionAgreement)}`,
    `  next-state match rate                  ${pct(r.nextStateMatch)}`,
    `  reward accuracy (|err| <= 0.05)        ${pct(r.rewardAccuracy)} (final steps: ${pct(r.finalRewardAccuracy)})`,
    `  done accuracy                          ${pct(r.doneAccuracy)}`,
    `  invalid-action detection (probes)      ${pct(r.invalidDetection)} (valid steps marked invalid: ${pct(r.falseInvalidRate)})`,
    `  initial state match                    ${pct(r.initialStateMatch)} (action agreement ${pct(r.initialActionAgreement)})`,
    `  ${(r.ms / 1000).toFixed(1)} s on tfjs ${r.backend}`,
    '',
  ].join('\n');
}
