/**
 * The data panel: export the inspected run (policy checkpoint, dreamgym JSONL, chat-messages
 * JSONL, run report), import a dreamgym JSONL file into its replay buffer, delete it or clear all
 * storage (each after an inline confirmation), check for and remove corrupt stored records, and
 * storage use with a request for persistence.
 */
import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import type { DataViewState } from '../state/data-state.ts';
import { isActive, type TrainingViewState } from '../state/training-state.ts';
import type { RepairReport } from '../../replay/index.ts';
import type { DataController, ExportKind } from './controller.ts';
import { formatBytes } from './run-data.ts';

/** Props of {@link DataPanel}. */
export interface DataPanelProps {
  /** The run the training view shows and its status (what decides whether data can change). */
  training: Pick<TrainingViewState, 'runId' | 'status'> & Partial<Pick<TrainingViewState, 'stalled'>>;
  data: DataViewState;
  controller: DataController;
}

const EXPORTS: readonly { kind: ExportKind; label: string }[] = [
  { kind: 'checkpoint', label: 'Policy checkpoint (.dgckpt)' },
  { kind: 'dataset', label: 'Experience (dreamgym JSONL)' },
  { kind: 'chat', label: 'Experience (chat-messages JSONL)' },
  { kind: 'report', label: 'Run report (config and metrics, JSON)' },
];

/** The data panel (re-rendered only when its props change). */
export const DataPanel = memo(function DataPanel({ training, data, controller }: DataPanelProps) {
  const [confirming, setConfirming] = useState<'delete' | 'clear' | 'repair' | null>(null);
  const [check, setCheck] = useState<RepairReport | null>(null);
  useEffect(() => {
    void controller.refreshStorage();
  }, [controller]);
  const runId = data.selectedRunId ?? training.runId;
  // The inspected run is the one this page trains right now: no import or delete then.
  const inspectedTrains = runId !== null && runId === training.runId && isActive(training.status);
  // A run that makes no progress can still be deleted: its training is ended first.
  const stalledHere = inspectedTrains && training.stalled === true;
  const busy = data.busy !== null;
  const s = data.storage;

  const importFile = (event: Event): void => {
    const input = event.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    input.value = '';
    if (file) void controller.importDataset(file);
  };

  return (
    <section class="card data-panel" aria-labelledby="data-heading" data-testid="data-panel">
      <h2 id="data-heading">Export, import and storage</h2>
      <p class="help" data-testid="data-run">
        {runId ? `Run: ${runId}` : 'No run yet: exports and imports apply to the run inspected above.'}
      </p>
      <div class="data-actions" role="group" aria-label="Export the run">
        {EXPORTS.map(({ kind, label }) => (
          <button type="button" key={kind} data-testid={`export-${kind}`} disabled={!runId || busy} onClick={() => void controller.export(kind)}>
            {label}
          </button>
        ))}
      </div>
      <div class="field file-field">
        <label for="import-jsonl">Import dreamgym JSONL into this run’s replay buffer</label>
        <input id="import-jsonl" data-testid="import-jsonl" type="file" accept=".jsonl,.ndjson,application/x-ndjson,text/plain" disabled={!runId || busy || inspectedTrains} onChange={importFile} />
        <span class="help">The whole file is checked first: a file with any bad line imports nothing.</span>
      </div>
      <div class="data-actions">
        <button type="button" class="danger" data-testid="delete-run" disabled={!runId || busy || (inspectedTrains && !stalledHere)} onClick={() => setConfirming('delete')}>
          Delete this run…
        </button>
        <button type="button" class="danger" data-testid="clear-storage" disabled={busy || isActive(training.status)} onClick={() => setConfirming('clear')}>
          Clear all storage…
        </button>
        <button type="button" data-testid="check-storage" disabled={busy} onClick={() => void controller.repair(true).then(setCheck)}>
          Check for corrupt records
        </button>
      </div>
      {check && check.removed.length > 0 && (
        <div class="repair-findings" data-testid="repair-findings">
          <ul>
            {check.removed.slice(0, 20).map((f) => (
              <li key={`${f.store} ${JSON.stringify(f.key)}`}>{`${f.store} ${JSON.stringify(f.key)}: ${f.problem}`}</li>
            ))}
          </ul>
          {check.removed.length > 20 && <p class="help">{`…and ${check.removed.length - 20} more.`}</p>}
          <button type="button" class="danger" data-testid="repair-storage" disabled={busy || isActive(training.status)} onClick={() => setConfirming('repair')}>
            Remove these records…
          </button>
        </div>
      )}
      {confirming && (
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-text" data-testid="confirm">
          <p id="confirm-text">
            {confirming === 'delete'
              ? `${stalledHere ? 'This run has made no progress for a while: deleting it ends its training first. ' : ''}Delete run ${runId ?? ''} with its replay buffer, checkpoints and metrics? This cannot be undone.`
              : confirming === 'repair'
                ? `Remove ${check?.removed.length ?? 0} corrupt record(s) (with the trajectories they break)? This cannot be undone.`
                : 'Delete every stored run, with all their data? This cannot be undone.'}
          </p>
          <button
            type="button"
            class="danger"
            data-testid="confirm-yes"
            onClick={() => {
              const what = confirming;
              setConfirming(null);
              if (what === 'delete' && runId) void controller.deleteRun(runId);
              if (what === 'clear') void controller.clearAll();
              if (what === 'repair') void controller.repair(false).then(() => setCheck(null));
            }}
          >
            {confirming === 'delete' ? 'Delete the run' : confirming === 'repair' ? 'Remove them' : 'Clear all storage'}
          </button>
          <button type="button" data-testid="confirm-no" onClick={() => setConfirming(null)}>
            Cancel
          </button>
        </div>
      )}
      <p class="status" role="status" aria-live="polite" data-testid="data-status" data-kind={data.error ? 'error' : data.busy ? 'busy' : 'ok'}>
        {data.error ?? data.busy ?? data.notice ?? ''}
      </p>
      <p class="help" data-testid="storage-use">
        Storage used: {s?.usage != null ? formatBytes(s.usage) : 'unknown'}
        {s?.quota != null ? ` of ${formatBytes(s.quota)} available to this page` : ''}.{' '}
        {s?.persisted === true ? 'Persistent: the browser keeps it under storage pressure.' : 'Not persistent: the browser may evict it under storage pressure.'}
      </p>
      <button type="button" data-testid="persist-storage" disabled={s?.persisted === true} onClick={() => void controller.persist()}>
        Ask for persistent storage
      </button>
    </section>
  );
});
