/**
 * The inspector: a run's replay buffer (filter by source, task and outcome; open a trajectory and
 * read each step's state, action, the experience model's reasoning and reward) and its curriculum
 * (tasks in lineage order with generation, V_tau and mean reward). Everything stored is shown as
 * text nodes only: task instructions, states and reasoning come from users, files and LLMs.
 */
import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import type { DataController } from '../data/controller.ts';
import type { DataViewState } from '../state/data-state.ts';
import { isActive, type TrainingStatus, type TrainingViewState } from '../state/training-state.ts';
import { BufferTable, TrajectoryView } from './BufferView.tsx';
import { CurriculumTable } from './CurriculumTable.tsx';
import { InspectFilters } from './InspectFilters.tsx';

/** Rows listed at first, and added by each "Show more" (rendering hundreds of rows costs frames). */
export const PAGE_ROWS = 100;

/** Props of {@link InspectPanel}: only what it shows, so that worker events of a training run do not re-render it. */
export interface InspectPanelProps {
  /** The run the training view shows. */
  shownRunId: string | null;
  status: TrainingStatus;
  runs: TrainingViewState['runs'];
  data: DataViewState;
  controller: DataController;
}

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

  const opened = data.opened;
  return (
    <section class="card inspect-panel" aria-labelledby="inspect-heading" data-testid="inspect-panel">
      <h2 id="inspect-heading">Inspect</h2>
      <InspectFilters shownRunId={shownRunId} runs={runs} data={data} controller={controller} />
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
          <BufferTable
            listed={data.trajectories ?? []}
            rows={bufferRows}
            pageRows={PAGE_ROWS}
            onMore={() => setBufferRows((n) => n + PAGE_ROWS)}
            openedId={opened?.id ?? null}
            controller={controller}
          />
          {opened && <TrajectoryView opened={opened} controller={controller} />}
          <CurriculumTable tasks={data.curriculum ?? []} rows={taskRows} pageRows={PAGE_ROWS} onMore={() => setTaskRows((n) => n + PAGE_ROWS)} />
        </>
      )}
    </section>
  );
});
