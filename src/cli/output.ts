/**
 * Output files of the `dreamgym` CLI: the rules every command that writes a file follows.
 *
 * - The path is checked before any work ({@link resolveOutput}); a bad one is one line naming it
 *   (a directory, a missing parent, an unwritable place, a pipe nobody reads) and never hangs.
 * - A regular file, or a new path, is written atomically: a temporary file next to it, synced,
 *   then renamed onto it. A symlink is followed to its target (the link stays a link).
 * - Devices, pipes, sockets and `-` (stdout) are written straight through: renaming onto
 *   `/dev/stdout` would replace the device with a regular file.
 * - Temporary files and the terminal cursor are cleaned up on every exit path: errors, a normal
 *   exit, SIGINT (exit 130) and SIGTERM (exit 143), through {@link installExitCleanup}.
 */
import { constants, rmSync } from 'node:fs';
import { access, lstat, open, type FileHandle, readlink, realpath, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { stopAllProgress } from './progress.ts';

/** One line for any value thrown by Node's fs (its message without its own path). */
export function fsReason(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.replace(/, \w+ '[^']*'$/, '').replace(/\s+/g, ' ');
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

// ---------------------------------------------------------------------------------------------
// cleanup on exit

let tmpCounter = 0;
/** Temporary files being written by this process, removed on exit whatever happens. */
const pending = new Set<string>();

/** Removes every temporary file still being written and restores the terminal (synchronous: runs in `exit`). */
export function cleanupSync(): void {
  for (const f of pending) {
    try {
      rmSync(f, { force: true });
    } catch {
      // Best effort: the process is ending.
    }
  }
  pending.clear();
  stopAllProgress();
}

let exitHook = false;
/**
 * Makes sure {@link cleanupSync} runs however the process ends: on `exit`, and on SIGINT or
 * SIGTERM, which otherwise kill Node without an `exit` event. A command that handles the
 * signals itself (a clean stop of training) installs its own listener; this fallback then
 * leaves the signal to it.
 */
export function installExitCleanup(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', cleanupSync);
  const fallback = (signal: 'SIGINT' | 'SIGTERM'): void => {
    if (process.listenerCount(signal) > 1) return;
    cleanupSync();
    process.stderr.write(`\ndreamgym: ${signal}: stopped; nothing written\n`);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', () => fallback('SIGINT'));
  process.on('SIGTERM', () => fallback('SIGTERM'));
}

function tempName(path: string): string {
  return `${path}.partial-${process.pid}-${++tmpCounter}`;
}

function track(tmp: string): void {
  installExitCleanup();
  pending.add(tmp);
}

/** Temporary files this process is writing now (for tests). */
export function pendingTemporaryFiles(): string[] {
  return [...pending];
}

/** Writes `data` to a temporary file next to `file`, syncs it, and renames it onto `file`. */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = tempName(file);
  track(tmp);
  try {
    const handle = await open(tmp, 'wx');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  } finally {
    pending.delete(tmp);
  }
}

// ---------------------------------------------------------------------------------------------
// output paths

/** Where an output goes: stdout (`-`), a device or pipe (written straight through), or a regular file (written atomically). */
export type OutputTarget = { kind: 'stdout'; name: string } | { kind: 'device'; name: string; path: string } | { kind: 'file'; name: string; path: string };

/** Thrown when an output path cannot be written; the message is one line naming it. */
export class OutputPathError extends Error {
  override name = 'OutputPathError';
}

/** Pipes opened while checking them (see {@link resolveOutput}), used by {@link openOutput}. */
const heldOpen = new WeakMap<OutputTarget, FileHandle>();

/** The path a dangling chain of symlinks ends at (a new file is created there, the links stay). */
async function danglingTarget(name: string, path: string): Promise<string> {
  for (let hops = 0; ; hops++) {
    let info;
    try {
      info = await lstat(path);
    } catch (e) {
      if (code(e) === 'ENOENT') return path;
      throw new OutputPathError(`cannot write ${name}: ${fsReason(e)}`);
    }
    if (!info.isSymbolicLink()) return path;
    if (hops >= 40) throw new OutputPathError(`cannot write ${name}: too many levels of symbolic links`);
    path = resolve(dirname(path), await readlink(path));
  }
}

/**
 * Checks an output path before any work and says how it will be written: `-` is stdout; a
 * symlink is followed to its target; an existing directory is refused; a device, FIFO or socket
 * is written straight through (a FIFO only when a reader has it open, so that nothing blocks);
 * a regular file or a new path is written atomically, which is tried here once (a temporary file
 * created and removed) so that an unwritable place, `/proc` included, fails now.
 */
export async function resolveOutput(name: string): Promise<OutputTarget> {
  if (name === '-') return { kind: 'stdout', name };
  if (name === '') throw new OutputPathError('cannot write an empty path');
  let info;
  try {
    info = await stat(name); // follows symlinks, /dev/stdout -> /proc/self/fd/1 -> pipe included
  } catch (e) {
    if (code(e) === 'ENOTDIR') throw new OutputPathError(`cannot write ${name}: a part of the path is not a directory`);
    if (code(e) !== 'ENOENT') throw new OutputPathError(`cannot write ${name}: ${fsReason(e)}`);
  }
  let path: string;
  if (info) {
    if (info.isDirectory()) throw new OutputPathError(`cannot write ${name}: it is a directory`);
    if (!info.isFile()) {
      try {
        await access(name, constants.W_OK);
        const target: OutputTarget = { kind: 'device', name, path: name };
        if (info.isFIFO()) {
          // O_NONBLOCK fails with ENXIO instead of waiting forever when nobody reads the pipe. The
          // probe stays open until the real (blocking) write end is: closing it first would hand
          // the reader an end of file.
          const probe = await open(name, constants.O_WRONLY | constants.O_NONBLOCK);
          try {
            heldOpen.set(target, await open(name, 'w'));
          } finally {
            await probe.close();
          }
        }
        return target;
      } catch (e) {
        const why = code(e) === 'ENXIO' ? 'no process is reading the pipe' : fsReason(e);
        throw new OutputPathError(`cannot write ${name}: ${why}`);
      }
    }
    try {
      path = await realpath(name);
    } catch (e) {
      throw new OutputPathError(`cannot write ${name}: ${fsReason(e)}`);
    }
  } else {
    path = await danglingTarget(name, resolve(name));
  }
  const parent = dirname(path);
  try {
    const dir = await stat(parent);
    if (!dir.isDirectory()) throw new OutputPathError(`cannot write ${name}: ${parent} is not a directory`);
  } catch (e) {
    if (e instanceof OutputPathError) throw e;
    throw new OutputPathError(`cannot write ${name}: ${code(e) === 'ENOENT' ? `directory ${parent} does not exist` : fsReason(e)}`);
  }
  const probe = tempName(path);
  track(probe);
  try {
    await (await open(probe, 'wx')).close();
  } catch (e) {
    throw new OutputPathError(`cannot write ${name}: ${fsReason(e)}`);
  } finally {
    await rm(probe, { force: true }).catch(() => {});
    pending.delete(probe);
  }
  return { kind: 'file', name, path };
}

/** Checks every output path before any work (see {@link resolveOutput}); refuses two that are the same file. */
export async function resolveOutputs(names: readonly string[]): Promise<OutputTarget[]> {
  const targets: OutputTarget[] = [];
  for (const name of names) targets.push(await resolveOutput(name));
  const seen = new Map<string, string>();
  for (const t of targets) {
    if (t.kind !== 'file') continue;
    const other = seen.get(t.path);
    if (other !== undefined) throw new OutputPathError(`cannot write ${t.name}: it is the same file as ${other}`);
    seen.set(t.path, t.name);
  }
  return targets;
}

// ---------------------------------------------------------------------------------------------
// writing

/** A streaming writer to an output target: `commit` makes the file appear, `abort` leaves nothing. */
export interface OutputWriter {
  write(chunk: string): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

async function writeStdout(chunk: string): Promise<void> {
  // Back-pressure: wait for the pipe to drain rather than buffer a whole dataset in memory.
  if (!process.stdout.write(chunk)) await new Promise<void>((done) => process.stdout.once('drain', () => done()));
}

/** Opens `target` for streaming (a regular file through a temporary file renamed on commit). */
export async function openOutput(target: OutputTarget): Promise<OutputWriter> {
  if (target.kind === 'stdout') return { write: writeStdout, commit: async () => {}, abort: async () => {} };
  const tmp = target.kind === 'file' ? tempName(target.path) : null;
  if (tmp) track(tmp);
  let handle = heldOpen.get(target);
  heldOpen.delete(target);
  try {
    handle ??= await open(tmp ?? target.path, tmp ? 'wx' : 'w');
  } catch (e) {
    if (tmp) pending.delete(tmp);
    throw new OutputPathError(`cannot write ${target.name}: ${fsReason(e)}`);
  }
  const h = handle;
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await h.close();
  };
  return {
    async write(chunk) {
      try {
        await h.write(chunk);
      } catch (e) {
        throw new OutputPathError(`cannot write ${target.name}: ${fsReason(e)}`);
      }
    },
    async commit() {
      try {
        if (tmp) await h.sync();
        await close();
        if (tmp) await rename(tmp, target.path);
      } catch (e) {
        if (tmp) await rm(tmp, { force: true });
        throw new OutputPathError(`cannot write ${target.name}: ${fsReason(e)}`);
      } finally {
        if (tmp) pending.delete(tmp);
      }
    },
    async abort() {
      await close().catch(() => {});
      if (tmp) {
        await rm(tmp, { force: true });
        pending.delete(tmp);
      }
    },
  };
}

/** Writes a whole output (atomically for a regular file). */
export async function writeOutput(target: OutputTarget, content: string): Promise<void> {
  const writer = await openOutput(target);
  try {
    await writer.write(content);
    await writer.commit();
  } catch (e) {
    await writer.abort();
    throw e;
  }
}
