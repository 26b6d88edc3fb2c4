/**
 * The watch panel: live charts of the run's figures, one point per completed iteration.
 */
import { memo } from 'preact/compat';
import type { IterationMetrics } from '../../train/loop.ts';
import { MetricChart, type ChartSpec } from './MetricChart.tsx';

/** The charted metrics, in display order. */
export const CHARTS: readonly ChartSpec[] = [
  // Behaviour cloning has no rollouts: its success is the accuracy on the demonstrations' decisions, and it has no reward.
  { id: 'success', title: 'Success rate (rollouts; behaviour cloning: accuracy on the demonstrations)', value: (m) => m.successRate, range: [0, 1] },
  { id: 'reward', title: 'Mean reward (rollouts)', value: (m) => (m.phase === 'sft' ? null : m.meanReward), missing: 'none while behaviour cloning', range: [0, 1] },
  { id: 'loss', title: 'Loss', value: (m) => m.loss, scale: 'asinh' },
  { id: 'kl', title: 'KL to reference', value: (m) => m.kl, scale: 'asinh' },
  { id: 'entropy', title: 'Entropy', value: (m) => m.entropy },
  { id: 'pool', title: 'Task pool size', value: (m) => m.poolSize },
  // V_tau's distribution over the iteration's task groups: its mean and max, and how many groups were informative.
  { id: 'vtau', title: 'V_tau over task groups (mean, max)', label: 'mean', value: (m) => m.vTauMean, more: [{ label: 'max', value: (m) => m.vTauMax, stroke: '#c2410c' }] },
  { id: 'vtau-share', title: 'Task groups with V_tau > 0 (share)', value: (m) => m.vTauPositiveShare, range: [0, 1] },
  { id: 'sps', title: 'Synthetic steps / s', value: (m) => m.syntheticStepsPerSec },
  { id: 'real', title: 'Real transitions used', value: (m) => m.realTransitions },
];

/** Props of {@link ChartsPanel}. */
export interface ChartsPanelProps {
  metrics: readonly IterationMetrics[];
}

/** The charts panel (re-rendered only when the metrics change, not on every worker event). */
export const ChartsPanel = memo(function ChartsPanel({ metrics }: ChartsPanelProps) {
  return (
    <section class="card charts-panel" aria-labelledby="charts-heading" data-testid="charts-panel">
      <h2 id="charts-heading">Watch</h2>
      {/* The line stays when the first point arrives, so the ten charts below do not move then. */}
      <p class="empty">{metrics.length === 0 ? 'The charts fill in as iterations end.' : 'One point per completed iteration.'}</p>
      <div class="charts-grid">
        {CHARTS.map((spec) => (
          <MetricChart key={spec.id} spec={spec} metrics={metrics} />
        ))}
      </div>
    </section>
  );
});
