import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, open, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { cleanupSync, openOutput, OutputPathError, pendingTemporaryFiles, resolveOutput, resolveOutputs, writeOutput } from '../src/cli/output.ts';
import { activeProgressCount, createProgress } from '../src/cli/progress.ts';
import { cli } from './fixtures/cli.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dreamgym-output-'));
});

/** Runs a shell command (mkfifo, a reader) and waits for it. */
function sh(command: string): Promise<number> {
  return new Promise((done) => spawn('sh', ['-c', command], { stdio: 'ignore' }).on('exit', (code) => done(code ?? -1)));
}

describe('resolveOutput', () => {
  it('checks the path before any work, with one line', async () => {
    await mkdir(join(dir, 'sub'));
    await expect(resolveOutput(join(dir, 'sub'))).rejects.toThrow(new OutputPathError(`cannot write ${join(dir, 'sub')}: it is a directory`));
    await expect(resolveOutput(join(dir, 'missing', 'x.json'))).rejects.toThrow(`cannot write ${join(dir, 'missing', 'x.json')}: directory ${join(dir, 'missing')} does not exist`);
    await expect(resolveOutput('/proc/nonexistent-dreamgym/y.json')).rejects.toThrow(/^cannot write \/proc\/nonexistent-dreamgym\/y\.json: /);
    expect(await resolveOutput('-')).toEqual({ kind: 'stdout', name: '-' });
    expect(await resolveOutput('/dev/null')).toEqual({ kind: 'device', name: '/dev/null', path: '/dev/null' });
    expect(await readdir(dir)).toEqual(['sub']);
  });

  it('refuses /proc files and a file below a file at once, without hanging', async () => {
    const started = Date.now();
    await expect(resolveOutput('/proc/self/status')).rejects.toThrow(/^cannot write \/proc\/self\/status: /);
    await expect(resolveOutput('/proc/self/y.json')).rejects.toThrow(/^cannot write \/proc\/self\/y\.json: /);
    await writeFile(join(dir, 'plain'), 'x');
    await expect(resolveOutput(join(dir, 'plain', 'y.json'))).rejects.toThrow(`cannot write ${join(dir, 'plain', 'y.json')}: a part of the path is not a directory`);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(pendingTemporaryFiles()).toEqual([]);
  });

  it('follows a symlink to a device or pipe and writes it straight through; a pipe nobody reads is refused', async () => {
    const fifo = join(dir, 'fifo');
    expect(await sh(`mkfifo ${fifo}`)).toBe(0);
    const link = join(dir, 'link');
    await symlink(fifo, link);
    await expect(resolveOutput(link)).rejects.toThrow(`cannot write ${link}: no process is reading the pipe`);
    // A reader: the pipe is written through and stays a pipe, the link stays a link.
    const got = join(dir, 'got');
    const reader = sh(`cat ${fifo} > ${got}`);
    let target;
    for (let i = 0; i < 100 && !target; i++) {
      target = await resolveOutput(link).catch(() => undefined);
      if (!target) await new Promise((r) => setTimeout(r, 50));
    }
    expect(target).toEqual({ kind: 'device', name: link, path: link });
    await writeOutput(target!, 'through the pipe\n');
    expect(await reader).toBe(0);
    expect(await readFile(got, 'utf8')).toBe('through the pipe\n');
    expect((await stat(fifo)).isFIFO()).toBe(true);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(['fifo', 'got', 'link']);
  });

  it('refuses two outputs that are the same file', async () => {
    const a = join(dir, 'a.json');
    await writeFile(a, '');
    await symlink(a, join(dir, 'b.json'));
    await expect(resolveOutputs([a, join(dir, 'b.json')])).rejects.toThrow(`cannot write ${join(dir, 'b.json')}: it is the same file as ${a}`);
  });
});

describe('writing', () => {
  it('writes regular files atomically, follows symlinks, writes devices straight through, and leaves no temporary file', async () => {
    const target = join(dir, 'real.json');
    await writeFile(target, 'old');
    const link = join(dir, 'link.json');
    await symlink(target, link);
    await writeOutput(await resolveOutput(link), 'new');
    expect(await readFile(target, 'utf8')).toBe('new');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    await writeOutput(await resolveOutput('/dev/null'), 'discarded');
    expect((await stat('/dev/null')).isCharacterDevice()).toBe(true);
    // An aborted stream leaves the old file as it was and no partial file.
    const writer = await openOutput(await resolveOutput(target));
    await writer.write('half');
    await writer.abort();
    expect(await readFile(target, 'utf8')).toBe('new');
    expect((await readdir(dir)).sort()).toEqual(['link.json', 'real.json']);
  });

  it('a dangling symlink gets its target created; the link stays', async () => {
    const link = join(dir, 'dangling.json');
    await symlink(join(dir, 'made.json'), link);
    await writeOutput(await resolveOutput(link), 'made');
    expect(await readFile(join(dir, 'made.json'), 'utf8')).toBe('made');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
  });

  it('a device error (ENOSPC on /dev/full) is one line naming the output', async () => {
    await expect(writeOutput(await resolveOutput('/dev/full'), 'x'.repeat(10))).rejects.toThrow(/^cannot write \/dev\/full: ENOSPC/);
    expect((await stat('/dev/full')).isCharacterDevice()).toBe(true);
  });
});

describe('progress bars', () => {
  it('shows a note after the count until the next update', () => {
    let screen = '';
    const tty = { isTTY: true, columns: 120, write: (s: string) => ((screen += s), true), on() {}, removeListener() {}, cursorTo() {}, clearLine() {}, moveCursor() {} };
    const bar = createProgress('shop dreamgym', 10, tty as unknown as NodeJS.WriteStream);
    bar.update(3, '(validating in the simulator: 12/50)');
    bar.stop();
    expect(screen).toContain('3/10 30% eta');
    expect(screen).toMatch(/3\/10 30% eta \S+ \(validating in the simulator: 12\/50\)/);
    screen = '';
    const next = createProgress('shop dreamgym', 10, tty as unknown as NodeJS.WriteStream);
    next.update(4);
    next.stop();
    expect(screen).toContain('4/10');
    expect(screen).not.toContain('validating');
  });
});

describe('cleanup on exit', () => {
  it('removes the temporary files being written and shows the cursor again', async () => {
    const writer = await openOutput(await resolveOutput(join(dir, 'big.jsonl')));
    await writer.write('partial');
    expect((await readdir(dir)).some((f) => f.startsWith('big.jsonl.partial-'))).toBe(true);
    let screen = '';
    const tty = { isTTY: true, columns: 80, write: (s: string) => ((screen += s), true), on() {}, removeListener() {}, cursorTo() {}, clearLine() {}, moveCursor() {} };
    const bar = createProgress('test', 10, tty as unknown as NodeJS.WriteStream);
    bar.update(3);
    expect(activeProgressCount()).toBe(1);
    expect(screen).toContain('\x1b[?25l');
    cleanupSync();
    expect(await readdir(dir)).toEqual([]);
    expect(activeProgressCount()).toBe(0);
    expect(screen.lastIndexOf('\x1b[?25h')).toBeGreaterThan(screen.lastIndexOf('\x1b[?25l'));
    await writer.abort();
  });
});

describe('outputs of the commands', () => {
  /** A tiny environment module (the contract of src/envs/module.ts) as a plain .mjs file. */
  async function counterModule(): Promise<string> {
    const path = join(dir, 'counter.mjs');
    await writeFile(
      path,
      [
        "export const name = 'counter';",
        "export const description = 'a counter';",
        'export const maxSteps = 5;',
        "export function create() { return { reset() { this.n = 0; return { text: 'count 0', actions: ['go', 'wait'] }; }, step(a) { this.n += a === 'go' ? 1 : 0; const done = this.n >= 2; return { observation: { text: 'count ' + this.n, actions: ['go', 'wait'] }, reward: done ? 1 : 0, done, info: { success: done } }; }, expertAction() { return 'go'; } }; }",
        "export function tasks({ split, count, seed }) { return Array.from({ length: count }, (_, i) => ({ id: `counter-${split}-${seed}-${i}`, instruction: 'press go twice', goal: { n: 2 } })); }",
        'export function validateTask() { return { ok: true }; }',
      ].join('\n'),
    );
    return path;
  }

  it('refuses an output that is an input file (links followed), before anything is written', async () => {
    const module = await counterModule();
    const before = await readFile(module, 'utf8');
    const link = join(dir, 'link.mjs');
    await symlink(module, link);
    for (const out of [module, link]) {
      const r = await cli('data', '--env-module', module, '--episodes', '2', '--out', out);
      expect(r.code, r.err).toBe(1);
      expect(r.err).toContain(`cannot write ${out}: it is the input ${module}`);
    }
    expect(await readFile(module, 'utf8')).toBe(before);
    expect((await readdir(dir)).sort()).toEqual(['counter.mjs', 'link.mjs']);
  });

  it('/dev/fd/N writes through the open descriptor: what the file held stays', async () => {
    const file = join(dir, 'log.jsonl');
    await writeFile(file, 'earlier line\n');
    const handle = await open(file, 'a');
    try {
      const r = await cli('data', '--env', 'shop', '--episodes', '2', '--out', `/dev/fd/${handle.fd}`);
      expect(r.code, r.err).toBe(0);
    } finally {
      await handle.close();
    }
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines[0]).toBe('earlier line');
    expect(lines.slice(1).map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['task', 'trajectory', 'task', 'trajectory']);
    const closed = await cli('data', '--env', 'shop', '--episodes', '1', '--out', '/dev/fd/987');
    expect(closed.code).toBe(1);
    expect(closed.err).toMatch(/cannot write \/dev\/fd\/987: descriptor 987 is not open/);
  });

  it('--out /dev/stdout with stdout appended to a file (>>) keeps the earlier lines', async () => {
    const file = join(dir, 'appended.jsonl');
    await writeFile(file, 'earlier line\n');
    const handle = await open(file, 'a');
    const code = await new Promise<number | null>((done) => {
      const child = spawn(process.execPath, ['src/cli/bin.mjs', 'data', '--env', 'shop', '--episodes', '2', '--out', '/dev/stdout'], { stdio: ['ignore', handle.fd, 'ignore'] });
      child.on('exit', (c) => done(c));
    });
    await handle.close();
    expect(code).toBe(0);
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(lines[0]).toBe('earlier line');
    expect(lines).toHaveLength(5);
  }, 60_000);

  it('overwriting a file keeps its mode; temporary files of dead processes next to it are removed, a live one\'s kept', async () => {
    const out = join(dir, 'private.jsonl');
    await writeFile(out, 'old', { mode: 0o600 });
    await chmod(out, 0o600);
    const dead = `${out}.partial-2147483646-7`;
    const live = `${out}.partial-${process.pid}-99999`;
    await writeFile(dead, 'left by a SIGKILL');
    await writeFile(live, 'being written');
    const r = await cli('data', '--env', 'shop', '--episodes', '1', '--out', out);
    expect(r.code, r.err).toBe(0);
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    expect((await readdir(dir)).sort()).toEqual(['private.jsonl', `private.jsonl.partial-${process.pid}-99999`]);
  });

  it('a reader that closes the pipe early ends the command quietly (no stack trace)', async () => {
    const result = await new Promise<{ code: number | null; err: string }>((done) => {
      const child = spawn(process.execPath, ['src/cli/bin.mjs', 'data', '--env', 'shop', '--episodes', '20000', '--out', '-'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.stdout.once('data', () => child.stdout.destroy());
      child.on('exit', (code) => done({ code, err }));
    });
    expect(result.err).not.toMatch(/EPIPE|Error|\n\s+at /);
    expect(result.code).toBe(141);
  }, 60_000);
});
