/**
 * The inspector's replay-buffer part: the stored trajectories that match the filter, a page at a
 * time, and the one opened for reading step by step. Stored text is rendered as text nodes only.
 */
import type { Trajectory } from '../../core/types.ts';
import type { TrajectoryRecord } from '../../replay/index.ts';
import type { DataController } from '../data/controller.ts';
import { readablePlaceholders } from './placeholders.ts';

/** Props of {@link BufferTable}. */
export interface BufferTableProps {
  listed: readonly TrajectoryRecord[];
  /** How many rows are listed now. */
  rows: number;
  /** How many rows "Show more" adds. */
  pageRows: number;
  onMore: () => void;
  openedId: string | null;
  controller: DataController;
}

/** The count line, the table of trajectories and its "Show more" button. */
export function BufferTable({ listed, rows, pageRows, onMore, openedId, controller }: BufferTableProps) {
  return (
    <>
      <p class="help" data-testid="inspect-count">
        {listed.length} trajector{listed.length === 1 ? 'y' : 'ies'} match{listed.length > rows ? `; the first ${rows} are listed` : ''}.
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
            {listed.slice(0, rows).map((t) => (
              <tr key={t.id} data-trajectory-id={t.id} data-source={t.source} aria-current={openedId === t.id ? 'true' : undefined}>
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
      {listed.length > rows && (
        <button type="button" data-testid="buffer-more" onClick={onMore}>
          Show {Math.min(pageRows, listed.length - rows)} more trajectories
        </button>
      )}
    </>
  );
}

/** One trajectory read step by step: state, action, the experience model's reasoning, reward. */
export function TrajectoryView({ opened, controller }: { opened: Trajectory; controller: DataController }) {
  return (
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
  );
}
