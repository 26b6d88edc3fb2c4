/** The inspector's pickers: which run, and which of its trajectories (source, task, outcome) to list. */
import type { TrajectorySource } from '../../core/types.ts';
import type { DataController } from '../data/controller.ts';
import type { OutcomeFilter } from '../data/run-data.ts';
import type { DataViewState } from '../state/data-state.ts';
import type { TrainingViewState } from '../state/training-state.ts';

const SOURCES: readonly TrajectorySource[] = ['offline', 'synthetic', 'real'];

/** Props of {@link InspectFilters}. */
export interface InspectFiltersProps {
  shownRunId: string | null;
  runs: TrainingViewState['runs'];
  data: DataViewState;
  controller: DataController;
}

/** The run, source, task and outcome menus. */
export function InspectFilters({ shownRunId, runs, data, controller }: InspectFiltersProps) {
  const tasks = data.curriculum ?? [];
  return (
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
  );
}
