/**
 * The inspector: a run's replay buffer (filter by source, task and outcome; open a trajectory and
 * read each step's state, action, the experience model's reasoning and reward) and its curriculum
 * (tasks in lineage order with generation, V_tau and mean reward). Everything stored is shown as
 * text nodes only: task instructions, states and reasoning come from users, files and LLMs.
 */
import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import type { TrajectorySource } from '../../core/types.ts';
import type { DataController } from '../data/controller.ts';
import { readablePlaceholders } from './placeholders.ts';
import type { OutcomeFilter } from '../data/run-data.ts';
import type { DataViewState } from '../state/data-state.ts';
import { isActive, type TrainingStatus, type TrainingViewState } from '../state/training-state.ts';

/** Rows listed at first, and added by each "Show more" (rendering hundreds of rows costs frames). */
export const PAGE_ROWS = 100;

const SOURCES: readonly TrajectorySource[] = ['offline', 'synthetic', 'real'];

/** Props of {@link InspectPanel}: only what it shows, so that worker events of a training run do not re-render it. */
export interface InspectPanelProps {
  /** The run the training view shows. */
  shownRunId: string | null;
  status: TrainingStatus;
  runs: TrainingViewState['runs'];
  data: DataViewState;
  controller: DataController;
}

const fmt = (x: number | null, digits = 3): string => (x === null ? 'n/a' : x.toFixed(digits));

/** The inspector panel. */
export const InspectPanel = memo(function InspectPanel({ shownRunId, status, runs, data, controller }: InspectPanelProps) {
  const runId = data.selectedRunId ?? shownRunId;
  const active = isActive(status);
  const [bufferRows, setBufferRows] = useState(PAGE_ROWS);
  const [taskRows, setTaskRows] = useState(PAGE_ROWS);
  // Reload when the run comes to rest (done, paused, failed) or another is picked. Not on every
  // iteration: reading the buffer on the main thread cost frames of up to 400 ms while training.
  useEffect(() => {
    if (!active) void controller.refresh();
  }, [runId, active, status, controller]);

  const listed = data.trajectories ?? [];
  const tasks = data.curriculum ?? [];
  const opened = data.opened;
  return (
    <section class="card inspect-panel" aria-labelledby="inspect-heading" data-testid="inspect-panel">
      <h2 id="inspect-heading">Inspect</h2>
      <div class="setup-grid">
        <div class="field">
          <label for="inspect-run">Run</label>
          <select id="inspect-run" data-testid="inspect-run" value={data.selectedRunId ?? ''} onChange={(e) => void controller.select((e.currentTarget as HTMLSelectElement).value || null)}>
            <option value="">The run shown above{shownRunId ? ` (${shownRunId})` : ''}</option>
            {runs.map((r) => (
              <option value={r.id} key={r.id}>
                {r.id}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="inspect-source">Source</label>
          <select
            id="inspect-source"
            data-testid="inspect-source"
            value={data.filter.source ?? ''}
            onChange={(e) => {
              const v = (e.currentTarget as HTMLSelectElement).value as TrajectorySource | '';
              void controller.filter({ ...data.filter, source: v || undefined });
            }}
          >
            <option value="">any</option>
            {SOURCES.map((s) => (
              <option value={s} key={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="inspect-task">Task</label>
          <select
            id="inspect-task"
            data-testid="inspect-task"
            value={data.filter.taskId ?? ''}
            onChange={(e) => void controller.filter({ ...data.filter, taskId: (e.currentTarget as HTMLSelectElement).value || undefined })}
          >
            <option value="">any</option>
            {tasks.map((t) => (
              <option value={t.id} key={t.id}>
                {t.id}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="inspect-outcome">Outcome</label>
          <select
            id="inspect-outcome"
            data-testid="inspect-outcome"
            value={data.filter.outcome ?? ''}
            onChange={(e) => void controller.filter({ ...data.filter, outcome: ((e.currentTarget as HTMLSelectElement).value || undefined) as OutcomeFilter | undefined })}
          >
            <option value="">any</option>
            <option value="success">success</option>
            <option value="failure">failure</option>
          </select>
        </div>
      </div>
      {!runId ? (
        <p class="empty">Start a run (or pick a stored one) to read its replay buffer and curriculum.</p>
      ) : (
        <>
          <h3>Replay buffer</h3>
          <p class="help">
            <button type="button" data-testid="inspect-refresh" onClick={() => void controller.refresh()}>
              Refresh
            </button>{' '}
            {active ? 'The run is training: Refresh reads what it has stored so far (the view updates by itself when it stops).' : ''}
          </p>
          <p class="help" data-testid="inspect-count">
            {listed.length} trajector{listed.length === 1 ? 'y' : 'ies'} match{listed.length > bufferRows ? `; the first ${bufferRows} are listed` : ''}.
          </p>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Stored trajectories (scrolls sideways)">
            <table data-testid="buffer-table">
              <caption>Stored trajectories</caption>
              <thead>
                <tr>
                  <th scope="col">Trajectory</th>
                  <th scope="col">Task</th>
                  <th scope="col">Source</th>
                  <th scope="col">Steps</th>
                  <th scope="col">Reward</th>
                  <th scope="col">Outcome</th>
                </tr>
              </thead>
              <tbody>
                {listed.slice(0, bufferRows).map((t) => (
                  <tr key={t.id} data-trajectory-id={t.id} data-source={t.source} aria-current={opened?.id === t.id ? 'true' : undefined}>
                    <th scope="row">
                      <button type="button" class="link" data-testid="open-trajectory" onClick={() => void controller.open(t.id)}>
                        {t.id}
                      </button>
                    </th>
                    <td>{t.taskId}</td>
                    <td>{t.source}</td>
                    <td>{t.length}</td>
                    <td>{t.reward.toFixed(2)}</td>
                    <td>{t.success ? 'success' : 'failure'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {listed.length > bufferRows && (
            <button type="button" data-testid="buffer-more" onClick={() => setBufferRows((n) => n + PAGE_ROWS)}>
              Show {Math.min(PAGE_ROWS, listed.length - bufferRows)} more trajectories
            </button>
          )}
          {opened && (
            <article class="trajectory" data-testid="trajectory-view" aria-labelledby="trajectory-heading">
              <h3 id="trajectory-heading">
                Trajectory {opened.id} ({opened.source}, task {opened.taskId}): {opened.success ? 'success' : 'failure'}, reward {opened.reward.toFixed(2)}
              </h3>
              <button type="button" data-testid="close-trajectory" onClick={() => void controller.open(null)}>
                Close
              </button>
              <ol class="steps">
                {opened.steps.map((step, i) => (
                  <li key={i} data-testid="trajectory-step">
                    <p class="step-head">
                      Step {i + 1}: reward {step.reward.toFixed(2)}
                      {step.valid ? '' : ', invalid action'}
                      {step.done ? ', episode ends' : ''}
                    </p>
                    <p class="step-label">State</p>
                    <pre class="observation" data-field="state">
                      {step.observation.text}
                    </pre>
                    <p class="step-label">
                      Action: <code data-field="action">{step.action}</code>
                    </p>
                    {step.reasoning !== undefined && (
                      <>
                        <p class="step-label">Experience model’s reasoning</p>
                        <pre class="reasoning" data-field="reasoning">
                          {readablePlaceholders(step.reasoning)}
                        </pre>
                      </>
                    )}
                  </li>
                ))}
              </ol>
            </article>
          )}
          <h3>Curriculum</h3>
          <p class="help">
            Tasks in lineage order: a generated task sits under the task it was varied from. V_tau is the reward variance of the task’s last group in the loop (generated
            tasks); the stored variance is over all its stored episodes.
          </p>
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Tasks of the run (scrolls sideways)">
            <table data-testid="curriculum-table">
              <caption>Tasks of the run</caption>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Origin</th>
                  <th scope="col">Generation</th>
                  <th scope="col">Episodes</th>
                  <th scope="col">Mean reward</th>
                  <th scope="col">Stored variance</th>
                  <th scope="col">V_tau (last group)</th>
                </tr>
              </thead>
              <tbody>
                {tasks.slice(0, taskRows).map((t) => (
                  <tr key={t.id} data-task-id={t.id} data-depth={t.depth} data-parent-id={t.parentId ?? ''}>
                    <th scope="row" style={{ paddingLeft: `${0.5 + 1.25 * t.depth}rem` }}>
                      {t.depth > 0 ? '↳ ' : ''}
                      <span class="task-instruction">{t.instruction}</span>
                      <span class="task-id"> ({t.id})</span>
                    </th>
                    <td>{t.origin}</td>
                    <td>{t.generation}</td>
                    <td>{t.episodes}</td>
                    <td>{fmt(t.meanReward)}</td>
                    <td>{fmt(t.rewardVariance)}</td>
                    <td>{t.vTau === null ? 'n/a' : `${t.vTau.toFixed(3)} (iteration ${t.scoredAt ?? ''})`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {tasks.length > taskRows && (
            <button type="button" data-testid="curriculum-more" onClick={() => setTaskRows((n) => n + PAGE_ROWS)}>
              Show {Math.min(PAGE_ROWS, tasks.length - taskRows)} more of {tasks.length} tasks
            </button>
          )}
        </>
      )}
    </section>
  );
});
