/**
 * Results: the held-out evaluation of the run shown (success with its 95% interval), and a
 * table comparing every evaluated run, like the CLI's experiment table.
 */
import { memo } from 'preact/compat';
import { groundingPhrase } from '../../train/config.ts';
import type { Interval } from '../../train/evaluate.ts';
import type { PageRunRecord, StoredRunEvaluation } from '../../train/runs/records.ts';
import { keptPhrase } from '../../train/validation.ts';

const formatPercent = (x: number): string => `${(100 * x).toFixed(1)}%`;

/** ` (simulator validation 96.0% -> 90.0%, kept the start)` when the synthetic phase ended with another policy than its last; `''` otherwise. */
export function validationNote(v: PageRunRecord['validation']): string {
  if (!v || v.end === undefined) return '';
  const kept = keptPhrase(v, formatPercent);
  return kept ? ` (simulator validation ${formatPercent(v.start)} -> ${formatPercent(v.end)}, ${kept})` : '';
}

/** `42.0% [31.0%, 53.0%]` */
export function formatInterval(i: Interval): string {
  return `${formatPercent(i.mean)} [${formatPercent(i.low)}, ${formatPercent(i.high)}]`;
}

/** The mode, with `+sft` when an RL mode was warm-started (as the CLI writes it). */
export function modeLabel(c: PageRunRecord['config']): string {
  const rl = c.mode === 'real' || c.mode === 'dreamgym' || c.mode === 's2r';
  return `${c.mode}${rl && c.warmStart === 'sft' ? '+sft' : ''}`;
}

/** Props of {@link ResultsPanel}. */
export interface ResultsPanelProps {
  evaluation: StoredRunEvaluation | null;
  runs: readonly PageRunRecord[];
}

/** The results panel (re-rendered only when its props change). */
export const ResultsPanel = memo(function ResultsPanel({ evaluation, runs }: ResultsPanelProps) {
  const evaluated = runs.filter((r): r is PageRunRecord & { evaluation: StoredRunEvaluation } => r.status === 'done' && r.evaluation !== undefined);
  return (
    <section class="card results-panel" aria-labelledby="results-heading" data-testid="results-panel">
      <h2 id="results-heading">Evaluate and compare</h2>
      {evaluation ? (
        <p class="evaluation" data-testid="evaluation">
          Held-out success {formatInterval(evaluation.success)} (95% CI) on {evaluation.episodes} test tasks in the real environment; mean reward{' '}
          {evaluation.meanReward.toFixed(3)}.
        </p>
      ) : (
        <p class="empty">A run is evaluated greedily on held-out test tasks in the real environment when its training ends.</p>
      )}
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Evaluated runs (scrolls sideways)">
        <table data-testid="comparison-table">
          <caption>Evaluated runs</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Env</th>
              <th scope="col">Mode</th>
              <th scope="col">Seed</th>
              <th scope="col">Iterations</th>
              <th scope="col">Success (95% CI)</th>
              <th scope="col">Mean reward</th>
              <th scope="col">Real transitions</th>
              <th scope="col">Offline transitions</th>
              <th scope="col">Wall time</th>
            </tr>
          </thead>
          <tbody>
            {evaluated.length === 0 ? (
              <tr>
                <td colSpan={10} class="empty">
                  No evaluated run yet.
                </td>
              </tr>
            ) : (
              evaluated.map((r) => (
                <tr key={r.id} data-run-id={r.id}>
                  <th scope="row">{r.id}</th>
                  <td>{r.config.env}</td>
                  <td>
                    {modeLabel(r.config)}
                    {r.llm ? `, on ${r.llm.chatModel}` : ''}
                    {r.grounding ? `, ${groundingPhrase(r.grounding)}` : ''}
                  </td>
                  <td>{r.config.seed}</td>
                  <td>
                    {r.iteration}
                    {r.stoppedBy === 'user' ? ' (stopped)' : ''}
                    {r.imported ? ' (checkpoint)' : ''}
                    {validationNote(r.validation)}
                  </td>
                  <td>{formatInterval(r.evaluation.success)}</td>
                  <td>{r.evaluation.meanReward.toFixed(3)}</td>
                  <td>{r.realTransitions}</td>
                  <td>{r.offlineTransitions}</td>
                  <td>{((r.trainWallMs + r.evaluation.wallMs) / 1000).toFixed(1)} s</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
});
