/** The inspector's curriculum part: a run's tasks in lineage order, a page at a time. */
import type { CurriculumRow } from './curriculum.ts';

const fmt = (x: number | null, digits = 3): string => (x === null ? 'n/a' : x.toFixed(digits));

/** Props of {@link CurriculumTable}. */
export interface CurriculumTableProps {
  tasks: readonly CurriculumRow[];
  /** How many rows are listed now. */
  rows: number;
  /** How many rows "Show more" adds. */
  pageRows: number;
  onMore: () => void;
}

/** The curriculum heading, its explanation, the table of tasks and its "Show more" button. */
export function CurriculumTable({ tasks, rows, pageRows, onMore }: CurriculumTableProps) {
  return (
    <>
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
            {tasks.slice(0, rows).map((t) => (
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
      {tasks.length > rows && (
        <button type="button" data-testid="curriculum-more" onClick={onMore}>
          Show {Math.min(pageRows, tasks.length - rows)} more of {tasks.length} tasks
        </button>
      )}
    </>
  );
}
