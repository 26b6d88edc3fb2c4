import cliProgress from 'cli-progress';

/** A progress reporter: a bar on a TTY, silence elsewhere (logs and pipes stay clean). */
export interface Progress {
  /** Sets the count; `note` (optional) is shown after the bar until the next update. */
  update(done: number, note?: string): void;
  stop(): void;
}

/** Bars on screen now: stopped on exit, so an interrupted command never leaves the cursor hidden. */
const active = new Set<{ stop(): void }>();

/** Stops every bar still running, which shows the cursor again (see src/cli/output.ts's exit cleanup). */
export function stopAllProgress(): void {
  for (const bar of [...active]) bar.stop();
  active.clear();
}

/** How many bars are running (for tests). */
export function activeProgressCount(): number {
  return active.size;
}

/** A progress bar on stderr when it is a terminal, otherwise a no-op. */
export function createProgress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} {percentage}% eta {eta}s{note}`, stream, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  let running = true;
  const handle = {
    stop: (): void => {
      if (!running) return;
      running = false;
      active.delete(handle);
      bar.stop();
    },
  };
  active.add(handle);
  bar.start(total, 0, { note: '' });
  return {
    update: (done, note) => {
      if (running) bar.update(done, { note: note ? ` ${note}` : '' });
    },
    stop: handle.stop,
  };
}
