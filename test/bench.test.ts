import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BENCH_PAGES, REPO_ROOT } from '../src/bench/browser.ts';
import { benchEnvs } from '../src/bench/envs.ts';
import * as tf from '@tensorflow/tfjs';
import { benchSchedule, measureBackendAgreement, measureGrpoThroughput, policyBenchRows, type PolicyBenchMeasurement } from '../src/bench/policy.ts';
import { DAWN_PACKAGE, DawnUnavailableError, installDawn } from '../src/bench/policy-dawn.ts';
import { BENCH_SUITES, replaceSection, suitesToRun } from '../src/cli/bench.ts';
import { describeTasks, framesRows, isMostlyGc, longestTasks, mainThreadTasks, quantile } from '../src/bench/frames.ts';
import { benchLlmCost } from './fixtures/llm-cost.ts';
import { clearEnvCaches } from '../src/envs/registry.ts';
import { generateLayout } from '../src/envs/household/layout.ts';
import { generateCatalogue } from '../src/envs/shop/catalogue.ts';
import { importGraph, importSpecifiers, REPO_ROOT as GRAPH_ROOT, resolveModule, resolveSpecifier, sourceFiles } from './fixtures/import-graph.ts';

const root = resolve(import.meta.dirname, '..');

describe('frame benchmark', () => {
  const meta = (pid: number, tid: number, name: string) => ({ ph: 'M', name: 'thread_name', pid, tid, args: { name } });
  const task = (tid: number, ts: number, dur: number, tdur?: number) => ({ ph: 'X', name: 'ThreadControllerImpl::RunTask', pid: 7, tid, ts, dur, ...(tdur === undefined ? {} : { tdur }) });
  const trace = {
    traceEvents: [
      meta(7, 1, 'CrRendererMain'),
      meta(7, 2, 'DedicatedWorker thread'),
      meta(9, 1, 'CrRendererMain'),
      task(1, 500, 100, 90),
      { ph: 'R', name: 'frames:start', pid: 7, tid: 1, ts: 1000 },
      task(1, 900, 300, 300),
      task(1, 1100, 12_000, 4000),
      task(1, 20_000, 2000),
      task(2, 1200, 90_000, 90_000),
      { ...task(1, 1300, 50_000, 50_000), pid: 9 },
      task(1, 29_500, 1000, 1000),
      { ph: 'R', name: 'frames:end', pid: 7, tid: 1, ts: 30_000 },
      task(1, 31_000, 5000, 5000),
    ],
  };

  it('takes the tasks of the page renderer main thread wholly inside the marks, wall and CPU time in ms', () => {
    expect(mainThreadTasks(trace)).toEqual([
      { wallMs: 12, cpuMs: 4 },
      { wallMs: 2, cpuMs: 2 },
    ]);
    expect(() => mainThreadTasks({ traceEvents: trace.traceEvents.filter((e) => e.name !== 'frames:end') })).toThrow(/frames:start \/ frames:end/);
    expect(() => mainThreadTasks({ traceEvents: trace.traceEvents.filter((e) => !(e.ph === 'M' && e.pid === 7 && e.tid === 1)) })).toThrow(/no main thread for renderer 7/);
  });

  it('breaks the longest tasks down into the events inside them, each without its children', () => {
    const x = (name: string, ts: number, dur: number, tdur: number, data?: object) => ({ ph: 'X', name, pid: 7, tid: 1, ts, dur, tdur, ...(data ? { args: { data } } : {}) });
    const events = [
      ...trace.traceEvents,
      // Inside the 12 ms task at 1100: a message handler that renders, then a collection with its phases.
      x('HandlePostMessage', 1110, 3000, 2500),
      x('FunctionCall', 1120, 2900, 2400, { functionName: 'render', url: 'http://127.0.0.1:5173/src/ui/App.tsx?t=1', lineNumber: 41 }),
      x('Layout', 1200, 500, 500),
      x('MajorGC', 5000, 1200, 1000),
      x('V8.GC_MC_EVACUATE', 5100, 600, 600),
      // Inside the 2 ms task at 20000, posted by the compositor.
      x('Paint', 20_100, 100, 100),
    ];
    const posted = events.map((e) => ('ts' in e && e.ts === 20_000 && e.name === 'ThreadControllerImpl::RunTask' ? { ...e, args: { src_func: 'ScheduledActionSendBeginMainFrame' } } : e));
    const [first, second, third] = longestTasks({ traceEvents: posted }, 2);
    expect(third).toBeUndefined();
    expect(first).toMatchObject({ cpuMs: 4, wallMs: 12, atMs: 0.1, postedBy: '?' });
    expect(first?.parts).toEqual([
      { name: 'render (App.tsx:42)', cpuMs: 1.9 },
      { name: 'MajorGC', cpuMs: 1 },
      { name: 'Layout', cpuMs: 0.5 },
      { name: 'HandlePostMessage', cpuMs: 0.1 },
    ]);
    expect(second).toMatchObject({ cpuMs: 2, postedBy: 'ScheduledActionSendBeginMainFrame', parts: [{ name: 'Paint', cpuMs: 0.1 }] });
    expect(describeTasks([first as NonNullable<typeof first>], 2)).toEqual(['4.0 ms CPU (12.0 wall) at 0.0 s, ?: render (App.tsx:42) 1.9, MajorGC 1.0, other 1.1']);
  });

  it('reports gaps, long tasks and the main thread own work per scenario', () => {
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([5, 1, 3, 2, 4], 0.99)).toBe(5);
    expect(quantile([], 0.5)).toBeNaN();
    const rows = framesRows('alone', { frameGapsMs: [16, 17, 60, 16, 120], longTasksMs: [70], windowMs: 40_000, warmupMs: 9000, iterations: 6, status: 'running' }, [{ wallMs: 30, cpuMs: 12 }, { wallMs: 2, cpuMs: 2 }], 1.5);
    const value = (name: string): number | undefined => rows.find((r) => r.name === `alone: ${name}`)?.value;
    expect(value('longest frame gap')).toBe(120);
    expect(value('frame gaps over 50 ms')).toBe(2);
    expect(value('long tasks (over 50 ms) on the main thread')).toBe(1);
    expect(value("main-thread tasks over 10 ms of CPU time (the page's own work)")).toBe(1);
    expect(value('longest main-thread task, CPU time')).toBe(12);
    expect(value('longest main-thread task, wall time')).toBe(30);
    expect(rows[0]?.note).toBe('40 s of a quick shop run once training, 6 iterations ended in it; machine load average 1.5 before it');
    expect(rows.find((r) => r.name === 'alone: frame gaps over 50 ms')?.unit).toBe('of 5 frames');
    expect(rows.some((r) => r.name.includes('garbage collection'))).toBe(false);
  });

  it('counts the tasks over 10 ms that are mostly garbage collection', () => {
    const task = (cpuMs: number, parts: { name: string; cpuMs: number }[]) => ({ cpuMs, wallMs: cpuMs * 3, atMs: 0, postedBy: '?', parts });
    const gc = task(11, [{ name: 'MajorGC', cpuMs: 9 }, { name: 'V8.GC_HEAP_EXTERNAL_EPILOGUE', cpuMs: 0.5 }]);
    const render = task(12, [{ name: 'Layout', cpuMs: 5 }, { name: 'MajorGC', cpuMs: 5 }]);
    const short = task(4, [{ name: 'MinorGC', cpuMs: 4 }]);
    expect([gc, render, short].map(isMostlyGc)).toEqual([true, false, true]);
    const rows = framesRows('loaded', { frameGapsMs: [16], longTasksMs: [], windowMs: 40_000, warmupMs: 9000, iterations: 6, status: 'running' }, [gc, render, short], undefined, [render, gc, short]);
    expect(rows.find((r) => r.name === 'loaded: of these, tasks spent mostly in V8\'s garbage collection')?.value).toBe(1);
    expect(rows.find((r) => r.name === "loaded: main-thread tasks over 10 ms of CPU time (the page's own work)")?.value).toBe(2);
  });
});

describe('bench markdown sections', () => {
  it('replaces only the text between a suite markers', () => {
    const doc = '# B\n\nintro\n<!-- bench:envs:start -->\nold\n<!-- bench:envs:end -->\nnotes by hand\n';
    const next = replaceSection(doc, 'envs', 'new table');
    expect(next).toBe('# B\n\nintro\n<!-- bench:envs:start -->\nnew table\n<!-- bench:envs:end -->\nnotes by hand\n');
  });
  it('appends a section when the markers are absent', () => {
    const next = replaceSection('# B\n', 'replay', 'rows');
    expect(next).toBe('# B\n\n## replay\n\n<!-- bench:replay:start -->\nrows\n<!-- bench:replay:end -->\n');
  });
  // `--markdown BENCHMARKS.md` appends a stray section at the end of the file when a suite's markers
  // are lost, so every suite keeps one pair, start before end.
  it('BENCHMARKS.md holds one pair of markers for every suite', () => {
    const doc = readFileSync(join(root, 'BENCHMARKS.md'), 'utf8');
    const count = (s: string): number => doc.split(s).length - 1;
    const broken = BENCH_SUITES.filter((suite) => {
      const start = `<!-- bench:${suite}:start -->`;
      const end = `<!-- bench:${suite}:end -->`;
      return count(start) !== 1 || count(end) !== 1 || doc.indexOf(start) > doc.indexOf(end);
    });
    expect(broken).toEqual([]);
  });
});

const CORE = ['core', 'envs', 'replay', 'policy', 'rl', 'experience', 'llm', 'curriculum', 'train'];
const FORBIDDEN = ['src/cli', 'src/ui', 'src/bench'];

describe('module layering', () => {
  it('finds every form of import', () => {
    const text = [
      "import { a } from '../cli/a.ts';",
      "import type { B } from\n  '../ui/b.ts';",
      "import './side-effect.ts';",
      "export { c } from '../bench/c.ts';",
      "export * from \"./star.ts\";",
      "const d = await import('../bench/d.ts');",
      'const e = await import(`../cli/e.ts`);',
      "new Worker(new URL('../bench/f.ts', import.meta.url));",
      "import tf from '@tensorflow/tfjs';",
    ].join('\n');
    expect(importSpecifiers(text).sort()).toEqual(
      ['../cli/a.ts', '../ui/b.ts', './side-effect.ts', '../bench/c.ts', './star.ts', '../bench/d.ts', '../cli/e.ts', '../bench/f.ts', '@tensorflow/tfjs'].sort(),
    );
    expect(resolveSpecifier(join(root, 'src/replay/x.ts'), '../cli/chromium.ts')).toBe('src/cli/chromium.ts');
    expect(resolveSpecifier(join(root, 'src/replay/x.ts'), '/src/bench/page.ts?url')).toBe('src/bench/page.ts');
    expect(resolveSpecifier(join(root, 'src/replay/x.ts'), 'idb')).toBeNull();
    expect(GRAPH_ROOT).toBe(root);
  });

  it('walks a module graph through every form of import, resolving .ts, .js and index.ts', () => {
    const dir = mkdtempSync(join(tmpdir(), 'import-graph-'));
    try {
      const files: Record<string, string> = {
        'entry.ts': [
          "import { a } from './a.js';", // .js meaning .ts
          "import type { B } from\n  './b';", // no extension
          "import './side';", // side effects only
          "export { c } from './lib';", // a folder's index.ts
          "export * from './star.ts';",
          "const d = await import('./d.ts');",
          'const e = await import(`./e.ts`);',
          "new Worker(new URL('./f.ts', import.meta.url));",
          "const g = require('./g.ts');",
          "import z from 'zod';",
          "import w from 'wasm-pkg/x.wasm?url';",
          "const h = await import(`./${'h'}.ts`);",
          "const i = await import(name);",
          "import { j } from './missing.ts';",
          "const k = new URL('./assets', import.meta.url);",
        ].join('\n'),
        'a.ts': "export const a = 1;",
        'b.ts': "export type B = number;",
        'side.ts': "import './deep/side2.ts';",
        'deep/side2.ts': "import '../deep/../a.ts';",
        'lib/index.ts': "export const c = 1;",
        'star.ts': "export * from './lib/index.ts';",
        'd.ts': '',
        'e.ts': '',
        'f.ts': "import { x } from 'idb';",
        'g.ts': '',
        'h.ts': '',
        'never.ts': '',
        'assets/logo.txt': '',
      };
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, name)), { recursive: true });
        writeFileSync(join(dir, name), text);
      }
      const graph = importGraph('entry.ts', dir);
      expect(graph.files).toEqual(['a.ts', 'b.ts', 'd.ts', 'deep/side2.ts', 'e.ts', 'entry.ts', 'f.ts', 'g.ts', 'lib/index.ts', 'side.ts', 'star.ts']);
      expect(graph.packages).toEqual(['idb', 'wasm-pkg/x.wasm', 'zod']);
      expect(graph.unresolved).toEqual(["entry.ts: ./missing.ts", "entry.ts: <non-literal: ./${'h'}.ts>", 'entry.ts: <non-literal: n>']);
      expect(graph.assets).toEqual(['assets']);
      expect(resolveModule(join(dir, 'entry.ts'), './lib', dir)).toBe(join(dir, 'lib', 'index.ts'));
      expect(resolveModule(join(dir, 'entry.ts'), './a.js', dir)).toBe(join(dir, 'a.ts'));
      expect(resolveModule(join(dir, 'entry.ts'), './nothing', dir)).toBeNull();
      expect(resolveModule(join(dir, 'entry.ts'), 'zod', dir)).toBeNull();
      expect(() => importGraph('nothing.ts', dir)).toThrow(/no file/);
      // What cannot be read as a literal is reported; a URL not relative to the module is no import.
      const computed = ["new URL(url, 'http://localhost/');", 'new URL(p, import.meta.url);', 'require(name);', "import('./a' + b);", 'typeof import("./t.ts");'].join('\n');
      expect(importSpecifiers(computed)).toEqual(['./t.ts', '<non-literal: p>', '<non-literal: n>', '<non-literal: ./a>']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`no module in src/{${CORE.join(',')}} imports src/cli, src/ui or src/bench`, () => {
    const files = CORE.flatMap((d) => sourceFiles(join(root, 'src', d)));
    expect(files.length).toBeGreaterThan(50);
    const offending: string[] = [];
    for (const file of files) {
      for (const spec of importSpecifiers(readFileSync(file, 'utf8'))) {
        const target = resolveSpecifier(file, spec);
        if (target && FORBIDDEN.some((f) => target === f || target.startsWith(`${f}/`))) offending.push(`${relative(root, file)} imports ${spec}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it(`no module in src/{${CORE.join(',')}} reaches src/cli, src/ui or src/bench, nor imports what cannot be checked`, () => {
    const files = CORE.flatMap((d) => sourceFiles(join(root, 'src', d))).filter((f) => f.endsWith('.ts'));
    const reached = new Set<string>();
    const unresolved: string[] = [];
    for (const file of files) {
      const graph = importGraph(file);
      for (const f of graph.files) reached.add(f);
      unresolved.push(...graph.unresolved);
    }
    expect(reached.size).toBeGreaterThan(50);
    expect([...reached].filter((f) => FORBIDDEN.some((d) => f.startsWith(`${d}/`)))).toEqual([]);
    expect([...new Set(unresolved)]).toEqual([]);
  });

  it('keeps every benchmark harness in src/bench', () => {
    const stray = CORE.flatMap((d) => sourceFiles(join(root, 'src', d))).filter((f) => /(^|[/\\])bench[^/\\]*$/.test(f));
    expect(stray.map((f) => relative(root, f))).toEqual([]);
  });
});

describe('benchmark pages', () => {
  it('each page the drivers open exists and loads a module that exists', () => {
    expect(REPO_ROOT.replace(/[/\\]$/, '')).toBe(root);
    for (const page of Object.values(BENCH_PAGES)) {
      const html = readFileSync(join(root, page), 'utf8');
      const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1] as string);
      expect(scripts.length, page).toBeGreaterThan(0);
      for (const src of scripts) expect(existsSync(resolve(dirname(join(root, page)), src)), `${page} -> ${src}`).toBe(true);
    }
  });
  it('the CLI lists every suite', () => {
    expect(BENCH_SUITES).toEqual(expect.arrayContaining(['envs', 'fidelity', 'llm-cost', 'replay', 'replay-browser', 'policy', 'policy-browser', 'policy-dawn', 'frames']));
  });
  it('`all` leaves out the suite that needs a package that is not a dependency', () => {
    expect(suitesToRun('all')).not.toContain('policy-dawn');
    expect(suitesToRun('all')).toEqual(BENCH_SUITES.filter((s) => s !== 'policy-dawn'));
    expect(suitesToRun('policy-dawn')).toEqual(['policy-dawn']);
  });
});

describe('envs suite', () => {
  it('clearEnvCaches makes the next use rebuild catalogues and layouts', () => {
    const catalogue = generateCatalogue(0);
    const layout = generateLayout(3);
    expect(generateCatalogue(0)).toBe(catalogue);
    expect(generateLayout(3)).toBe(layout);
    clearEnvCaches();
    expect(generateCatalogue(0)).not.toBe(catalogue);
    expect(generateLayout(3)).not.toBe(layout);
    expect(generateCatalogue(0).products.map((p) => p.id)).toEqual(catalogue.products.map((p) => p.id));
  });

  it('reports cold (fresh caches) and warm (repeated) figures separately for each environment', async () => {
    const before = generateCatalogue(0);
    const rows = await benchEnvs({ tasks: 4, reps: 2 });
    // The cold passes emptied the caches: the catalogue built before the run is gone.
    expect(generateCatalogue(0)).not.toBe(before);
    const names = rows.map((r) => r.name);
    for (const env of ['shop', 'household']) {
      for (const phase of ['cold', 'warm']) {
        expect(names).toContain(`${env}: generate 4 train tasks, ${phase}`);
        expect(names).toContain(`${env}: expert episode steps per second, ${phase}`);
      }
    }
    for (const r of rows) expect(Number.isFinite(r.value) && r.value > 0, r.name).toBe(true);
    expect(rows.find((r) => r.name === 'shop: expert episode steps per second, cold')?.note).toMatch(/fresh caches/);
  });
});

describe('policy suite', () => {
  it('interleaves the backends: each repetition runs every backend, alternating which goes first', () => {
    const order = benchSchedule(['wasm', 'cpu'], 2, 3).map((s) => `${s.size}.${s.rep}:${s.backend}`);
    expect(order).toEqual([
      '0.0:wasm', '0.0:cpu', '0.1:cpu', '0.1:wasm', '0.2:wasm', '0.2:cpu',
      '1.0:cpu', '1.0:wasm', '1.1:wasm', '1.1:cpu', '1.2:cpu', '1.2:wasm',
    ]);
    const three = benchSchedule(['a', 'b', 'c'], 1, 3).map((s) => s.backend).join('');
    expect(three).toBe('abcbcacab');
  });

  it('reports the ratio to wasm per size from side-by-side repetitions', () => {
    const report = { backend: 'wasm' as const, requested: 'wasm' as const, threaded: false, threads: 1, adapter: null, reason: '', failures: [] };
    const m = (backend: 'wasm' | 'cpu', decisions: number, times: number[]): PolicyBenchMeasurement => ({
      backend,
      report: { ...report, backend, threads: backend === 'wasm' ? 1 : 0 },
      decisions,
      candidateRows: 100,
      msPerUpdate: [...times].sort((a, b) => a - b)[1] as number,
      rowsPerSecond: 0,
      reps: times.length,
      times,
    });
    // Load drifts between repetitions; the paired ratios stay at 0.1 (cpu 10x slower) at size 8.
    const rows = policyBenchRows([m('wasm', 8, [10, 40, 20]), m('cpu', 8, [100, 400, 200]), m('wasm', 16, [10, 10, 10]), m('cpu', 16, [50, 50, 50])], 'Node');
    const ratio = (d: number) => rows.find((r) => r.name === `cpu (Node) / wasm throughput ratio, ${d} decisions`);
    expect(ratio(8)?.value).toBeCloseTo(0.1, 10);
    expect(ratio(16)?.value).toBeCloseTo(0.2, 10);
    expect(ratio(8)?.note).toMatch(/median of 3 side-by-side/);
  });

  it('measures wasm and cpu in Node, interleaved, one time per repetition', async () => {
    const lines: string[] = [];
    const ms = await measureGrpoThroughput({ backends: ['wasm', 'cpu'], sizes: [8, 16], dim: 16, hiddenDim: 8, reps: 2, log: (l) => lines.push(l) });
    expect(ms.map((m) => `${m.backend}:${m.decisions}`)).toEqual(['wasm:8', 'wasm:16', 'cpu:8', 'cpu:16']);
    for (const m of ms) {
      expect(m.times).toHaveLength(2);
      expect(m.rowsPerSecond).toBeGreaterThan(0);
    }
    const runs = lines.filter((l) => l.includes('repetition')).map((l) => l.split(' ')[0]);
    expect(runs).toEqual(['wasm', 'cpu', 'cpu', 'wasm', 'wasm', 'cpu', 'cpu', 'wasm']);
  });

  it('backend agreement: the same updates from the same seed on cpu and wasm end at the same weights', async () => {
    const before = tf.memory().numTensors;
    const a = await measureBackendAgreement('cpu', { dim: 32, decisions: 16, updates: 2 });
    expect(a.updates).toBe(2);
    expect(a.maxWeight).toBeGreaterThan(0.01);
    expect(a.maxLossDifference).toBeLessThan(1e-4);
    expect(a.maxWeightDifference).toBeLessThan(1e-4);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('policy-dawn suite', () => {
  it('says how to install Dawn when the package is missing', async () => {
    const missing = () => Promise.reject(new Error("Cannot find package 'webgpu'"));
    const err = await installDawn([], missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DawnUnavailableError);
    expect((err as Error).message).toContain(`npm install --no-save ${DAWN_PACKAGE}`);
    expect((err as Error).message).toContain("Cannot find package 'webgpu'");
  });

  it('exposes Dawn as navigator.gpu with the WebGPU globals, passing the flags through', async () => {
    const g = globalThis as { navigator?: { gpu?: unknown }; GPUBufferUsage?: unknown };
    const saved = { navigator: Object.getOwnPropertyDescriptor(globalThis, 'navigator'), usage: g.GPUBufferUsage };
    const gpu = { requestAdapter: async () => null };
    const seen: string[][] = [];
    try {
      await installDawn(['backend=vulkan'], async () => ({ create: (flags) => (seen.push(flags), gpu), globals: { GPUBufferUsage: { STORAGE: 128 } } }));
      expect(seen).toEqual([['backend=vulkan']]);
      expect(g.navigator?.gpu).toBe(gpu);
      expect(g.GPUBufferUsage).toEqual({ STORAGE: 128 });
    } finally {
      if (saved.navigator) Object.defineProperty(globalThis, 'navigator', saved.navigator);
      else delete g.navigator;
      if (g.navigator && saved.navigator) delete (g.navigator as { gpu?: unknown }).gpu;
      g.GPUBufferUsage = saved.usage;
      if (saved.usage === undefined) delete g.GPUBufferUsage;
    }
  });
});

describe('llm-cost', () => {
  it("measures KV-cache reuse in the training loop's order, counted as WebLLM decides it, beside one episode's steps back to back", async () => {
    const rows = await benchLlmCost({ envs: ['shop'], tasks: 2, groupSize: 4, epsilons: [0.1] });
    const value = (pattern: RegExp): number => {
      const row = rows.find((r) => pattern.test(r.name));
      if (!row) throw new Error(`no row matches ${pattern}`);
      return row.value;
    };
    const loopReuse = value(/as the loop runs: calls that extended the model's conversation/);
    const backToBack = value(/back to back \(not the loop's order\): calls that extended/);
    expect(loopReuse).toBe(0);
    expect(backToBack).toBeGreaterThan(20);
    // As the loop runs, a conversation per trajectory prefills more than a fresh prompt per step.
    expect(value(/as the loop runs: prompt characters prefilled per step, one conversation/)).toBeGreaterThan(value(/as the loop runs: prompt characters prefilled per step, a fresh prompt/));
  }, 120_000);
});
