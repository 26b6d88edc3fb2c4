import cliProgress from 'cli-progress';

/** A progress reporter: a bar on a TTY, silence elsewhere (logs and pipes stay clean). */
export interface Progress {
  update(done: number): void;
  stop(): void;
}

/** A progress bar on stderr when it is a terminal, otherwise a no-op. */
export function createProgress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {value}/{total} {percentage}% eta {eta}s`, stream, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return {
    update: (done) => bar.update(done),
    stop: () => bar.stop(),
  };
}
