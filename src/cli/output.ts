/**
 * Output files of the `dreamgym` CLI: the rules every command that writes a file follows.
 *
 * - The path is checked before any work ({@link resolveOutput}); a bad one is one line naming it
 *   (a directory, a missing parent, an unwritable place, a pipe nobody reads) and never hangs.
 * - A regular file, or a new path, is written atomically: a temporary file next to it, synced,
 *   then renamed onto it. A symlink is followed to its target (the link stays a link).
 * - Devices, pipes, sockets and `-` (stdout) are written straight through: renaming onto
 *   `/dev/stdout` would replace the device with a regular file. `-`, `/dev/stdout`, `/dev/stderr`
 *   and `/dev/fd/N` are written through the descriptor this process already has open, so output
 *   redirected to a file (`>` or `>>`) is written where the shell put it, never replaced.
 * - An output is refused when it is one of the command's input files (same device and inode,
 *   links followed) or lies inside a run store's runs/, before anything is created.
 * - Overwriting a file keeps its permission bits; temporary files that a killed process left next
 *   to an output (`NAME.partial-PID-N`, that PID gone) are removed by the next write of it.
 * - A renamed file's directory is synced too, so the rename survives a crash.
 * - Temporary files and the terminal cursor are cleaned up on every exit path: errors, a normal
 *   exit, SIGINT (exit 130) and SIGTERM (exit 143), through {@link installExitCleanup}.
 */
import { constants, fstatSync, rmSync, write as writeFd } from 'node:fs';
import { access, lstat, open, type FileHandle, readdir, readlink, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { stopAllProgress } from './progress.ts';

/** One line for any value thrown by Node's fs (its message without its own path). */
export function fsReason(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.replace(/, \w+ '[^']*'$/, '').replace(/\s+/g, ' ');
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | null)?.code;
}

/**
 * Text safe to print on a terminal: control characters (escape sequences, bells, carriage
 * returns, C1 codes), bidirectional overrides and isolates (U+202E would show a name reversed) and
 * lone surrogates from a file's bytes are shown as `\xHH` / `\uHHHH` escapes instead of being sent
 * raw. Newlines and tabs stay.
 */
export function printable(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => {
    const n = c.charCodeAt(0);
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
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
  // A reader that closes the pipe early (`| head`) ends the command quietly, as SIGPIPE ends other tools.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    cleanupSync();
    process.exit(141);
  });
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return code(e) === 'EPERM';
  }
}

/** Removes `FILE.partial-PID-N` files next to `file` whose process is gone (a SIGKILL leaves them). */
async function removeStalePartials(file: string): Promise<string[]> {
  const base = basename(file);
  const removed: string[] = [];
  let names: string[];
  try {
    names = await readdir(dirname(file));
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(`${base}.partial-`)) continue;
    const m = /^(\d+)-\d+$/.exec(name.slice(base.length + '.partial-'.length));
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || alive(pid)) continue;
    await rm(join(dirname(file), name), { force: true }).catch(() => {});
    removed.push(name);
  }
  return removed;
}

/**
 * Syncs a directory, so that a rename or a new file in it survives a crash. Where the platform
 * cannot sync a directory (EISDIR, EINVAL, EPERM on some systems), nothing more can be done.
 */
export async function syncDir(dir: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(dir, 'r');
  } catch {
    return;
  }
  try {
    await handle.sync();
  } catch (e) {
    if (!['EISDIR', 'EINVAL', 'EPERM', 'EBADF'].includes(code(e) ?? '')) throw e;
  } finally {
    await handle.close();
  }
}

/** The permission bits of an existing regular file, or null. */
async function modeOf(file: string): Promise<number | null> {
  const info = await stat(file).catch(() => null);
  return info?.isFile() ? info.mode & 0o7777 : null;
}

/** Writes `data` to a temporary file next to `file`, syncs it, renames it onto `file` (keeping its mode), and syncs the directory. */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  await removeStalePartials(file);
  const tmp = tempName(file);
  track(tmp);
  try {
    const mode = await modeOf(file);
    const handle = await open(tmp, 'wx');
    try {
      if (mode !== null) await handle.chmod(mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
    await syncDir(dirname(file));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  } finally {
    pending.delete(tmp);
  }
}

// ---------------------------------------------------------------------------------------------
// output paths

/**
 * Where an output goes: stdout (`-`, `/dev/stdout`), another descriptor this process has open
 * (`/dev/fd/N`, `/dev/stderr`), a device or pipe (written straight through), or a regular file
 * (written atomically).
 */
export type OutputTarget =
  | { kind: 'stdout'; name: string }
  | { kind: 'fd'; name: string; fd: number }
  | { kind: 'device'; name: string; path: string }
  | { kind: 'file'; name: string; path: string };

/** What an output must not be: one of the command's inputs, or a file inside a run store's runs/. */
export interface OutputGuard {
  /** Files the command reads (compared by device and inode, links followed); missing ones are ignored. */
  inputs?: readonly (string | undefined)[];
  /** A directory nothing may be written into (a run store's runs/), and what it is, for the message. */
  forbiddenDir?: { path: string; what: string };
}

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
export async function resolveOutput(name: string, guard: OutputGuard = {}): Promise<OutputTarget> {
  if (name === '-') return { kind: 'stdout', name };
  if (name === '') throw new OutputPathError('cannot write an empty path');
  const fd = descriptorOf(name);
  if (fd !== null) {
    if (fd === 1) return { kind: 'stdout', name };
    let open: ReturnType<typeof fstatSync>;
    try {
      open = fstatSync(fd);
    } catch (e) {
      throw new OutputPathError(`cannot write ${name}: ${code(e) === 'EBADF' ? `descriptor ${fd} is not open` : fsReason(e)}`);
    }
    if (open.isDirectory()) throw new OutputPathError(`cannot write ${name}: descriptor ${fd} is a directory`);
    await checkNotInput(name, open, guard);
    return { kind: 'fd', name, fd };
  }
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
    await checkNotInput(name, info, guard);
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
  await checkNotInside(name, parent, guard);
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

/** The descriptor a name stands for (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`), or null. */
function descriptorOf(name: string): number | null {
  if (name === '/dev/stdout') return 1;
  if (name === '/dev/stderr') return 2;
  const m = /^\/(?:dev|proc\/self)\/fd\/(\d{1,9})$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** Refuses an output that is one of the guard's input files (same device and inode). */
async function checkNotInput(name: string, info: { dev: number; ino: number }, guard: OutputGuard): Promise<void> {
  for (const input of guard.inputs ?? []) {
    if (input === undefined) continue;
    const other = await stat(input).catch(() => null);
    if (other && other.dev === info.dev && other.ino === info.ino) {
      throw new OutputPathError(`cannot write ${name}: it is the input ${input} (writing it would destroy what is read)`);
    }
  }
}

/** Refuses an output whose directory `parent` lies inside the guard's forbidden directory. */
async function checkNotInside(name: string, parent: string, guard: OutputGuard): Promise<void> {
  if (!guard.forbiddenDir) return;
  const forbidden = await realpath(guard.forbiddenDir.path).catch(() => null);
  if (forbidden === null) return;
  const real = await realpath(parent).catch(() => parent);
  const rel = relative(forbidden, real);
  if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) {
    throw new OutputPathError(`cannot write ${name}: it is inside ${guard.forbiddenDir.what} (${guard.forbiddenDir.path}), whose files only the run store writes`);
  }
}

/** Checks every output path before any work (see {@link resolveOutput}); refuses two that are the same file. */
export async function resolveOutputs(names: readonly string[], guard: OutputGuard = {}): Promise<OutputTarget[]> {
  const targets: OutputTarget[] = [];
  for (const name of names) targets.push(await resolveOutput(name, guard));
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

/** Writes all of `chunk` to descriptor `fd`, which this process does not own (it is never closed). */
async function writeAllFd(fd: number, chunk: string): Promise<void> {
  let bytes = Buffer.from(chunk, 'utf8');
  while (bytes.length > 0) {
    const written = await new Promise<number>((done, fail) => writeFd(fd, bytes, 0, bytes.length, null, (e, n) => (e ? fail(e) : done(n))));
    bytes = bytes.subarray(written);
  }
}

/** Opens `target` for streaming (a regular file through a temporary file renamed on commit). */
export async function openOutput(target: OutputTarget): Promise<OutputWriter> {
  if (target.kind === 'stdout') return { write: writeStdout, commit: async () => {}, abort: async () => {} };
  if (target.kind === 'fd') {
    return {
      async write(chunk) {
        try {
          await writeAllFd(target.fd, chunk);
        } catch (e) {
          throw new OutputPathError(`cannot write ${target.name}: ${fsReason(e)}`);
        }
      },
      commit: async () => {},
      abort: async () => {},
    };
  }
  const tmp = target.kind === 'file' ? tempName(target.path) : null;
  if (tmp) {
    await removeStalePartials(target.path);
    track(tmp);
  }
  const mode = target.kind === 'file' ? await modeOf(target.path) : null;
  let handle = heldOpen.get(target);
  heldOpen.delete(target);
  try {
    handle ??= await open(tmp ?? target.path, tmp ? 'wx' : 'w');
    if (tmp && mode !== null) await handle.chmod(mode);
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
        if (tmp) {
          await rename(tmp, target.path);
          await syncDir(dirname(target.path));
        }
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
