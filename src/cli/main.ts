/**
 * The headless `dreamgym` command line: the same core as the page, for scripted experiments.
 * Every command has `--help`.
 */
import { open } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { JsonlError } from '../core/jsonl.ts';
import { validateJsonl } from '../replay/jsonl-io.ts';
import { ENV_NAMES } from '../core/types.ts';
import { chooseEnv, timeoutArg } from './env-module.ts';
import { runBench, BENCH_SUITES, type BenchSuite } from './bench.ts';
import { fileError, writeOfflineData } from './data.ts';
import { doctorStore, formatDoctor } from './doctor.ts';
import { DEFAULT_STORE_DIR } from './run-store.ts';
import { formatFidelity, runFidelity } from './fidelity.ts';
import { installExitCleanup, printable, resolveOutput, writeOutput } from './output.ts';

export { printable };
import { addTrainingCommands, CliExit, CliUsageError, connectLlm, countArg, seedArg } from './train.ts';

/** The most episodes one command generates: bounded so a typo cannot run for days. */
const MAX_EPISODES = 1_000_000;

/** `expert`, `noisy:EPS`, or (for `data`) `demonstrator`. */
function dataPolicySpec(value: string): string {
  if (value === 'demonstrator') return value;
  try {
    return policySpec(value);
  } catch {
    throw new InvalidArgumentError(`expected "expert", "demonstrator" or "noisy:EPS" with EPS in [0, 1], got ${JSON.stringify(value)}`);
  }
}

function policySpec(value: string): string {
  if (value === 'expert') return value;
  const m = /^noisy:(\d*\.?\d+)$/.exec(value);
  if (m && Number(m[1]) <= 1) return value;
  throw new InvalidArgumentError(`expected "expert" or "noisy:EPS" with EPS in [0, 1], got ${JSON.stringify(value)}`);
}

/** A policy or a comma-separated mixture of policies (`noisy:0.3,noisy:1`). */
function policyMixture(value: string): string {
  for (const part of value.split(',')) {
    try {
      policySpec(part.trim());
    } catch {
      throw new InvalidArgumentError(`expected policies "expert" or "noisy:EPS" (EPS in [0, 1]), comma-separated, got ${JSON.stringify(value)}`);
    }
  }
  return value;
}

/** Builds the command tree. Output goes through `out`/`err` so tests can capture it. */
export function buildProgram(out: (text: string) => void, err: (text: string) => void): Command {
  const program = new Command('dreamgym')
    .description('DreamGym in the browser: headless CLI running the same core as the page.')
    .configureOutput({ writeOut: out, writeErr: err })
    .exitOverride()
    .showHelpAfterError();

  program
    .command('data')
    .description('Run a rule-based policy in a real environment and write tasks + trajectories as dreamgym JSONL.')
    .addOption(new Option('--env <name>', 'built-in environment (or --env-module)').choices([...ENV_NAMES]))
    .option('--env-module <path>', 'your own environment module (an ES module in the contract the README describes), instead of --env')
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .option('--episodes <n>', `number of episodes (one per seed task, at most ${MAX_EPISODES})`, countArg(1, MAX_EPISODES), 100)
    .option('--seed <s>', 'seed for tasks and policy noise', seedArg, 0)
    .option('--policy <p>', 'expert | noisy:EPS (expert with prob 1-EPS, random admissible action otherwise) | demonstrator (the environment\'s goal-blind demonstrator: shop, household, or a module\'s demonstratorAction())', dataPolicySpec, 'expert')
    .addOption(new Option('--split <split>', 'task split').choices(['train', 'test']).default('train'))
    .requiredOption('--out <file>', 'output JSONL file (- for stdout)')
    .action(async (opts: { env?: string; envModule?: string; envTimeout?: number; episodes: number; seed: number; policy: string; split: 'train' | 'test'; out: string }) => {
      const target = await resolveOutput(opts.out, { inputs: [opts.envModule] });
      const env = chooseEnv(opts);
      const spec = env.spec;
      const started = performance.now();
      const summary = await writeOfflineData(spec, opts, target).finally(() => env.dispose());
      const seconds = (performance.now() - started) / 1000;
      // With the data on stdout, the summary goes to stderr.
      (target.kind === 'stdout' ? err : out)(
        `${spec.name}: episodes=${summary.episodes} success_rate=${summary.successRate.toFixed(3)} ` +
          `mean_steps=${summary.meanSteps.toFixed(2)} mean_reward=${summary.meanReward.toFixed(3)} ` +
          `split=${opts.split} policy=${opts.policy} seconds=${seconds.toFixed(1)} out=${opts.out}\n`,
      );
    });

  program
    .command('validate')
    .description('Check a dreamgym JSONL file: every line, every field; prints counts or the problems with line numbers.')
    .argument('<file>', 'JSONL file')
    .action(async (file: string) => {
      // Streamed, through the very checks import makes: a file validate passes, import accepts.
      const handle = await open(file, 'r').catch((e: unknown) => {
        throw fileError('read', file, e);
      });
      let counts;
      try {
        counts = await validateJsonl(handle.createReadStream({ autoClose: false }));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== undefined) throw fileError('read', file, e);
        throw e;
      } finally {
        await handle.close().catch(() => {});
      }
      out(`${printable(file)}: valid, ${counts.tasks} tasks, ${counts.trajectories} trajectories\n`);
    });

  program
    .command('fidelity')
    .description(
      'Measure how faithfully an experience model imitates a real environment on held-out test-split episodes, next to trivial ' +
        'simulators (echo: nothing changes; majority: the most frequent outcome of each kind of action): admissible-action ' +
        'agreement, next-state match, within-episode consistency, reward and done accuracy, final-step verdicts on successes ' +
        'and failures; and the success of a random policy, a noisy expert and noisy goal-blind policies (the scripted reference, the ' +
        'demonstrator) inside the simulator against the real environment.',
    )
    .addOption(new Option('--env <name>', 'built-in environment (or --env-module)').choices([...ENV_NAMES]))
    .option('--env-module <path>', 'your own environment module (see the README), instead of --env')
    .addOption(new Option('--env-timeout <ms>', 'most milliseconds one call into --env-module may take (default 10000)').argParser(timeoutArg).hideHelp())
    .addOption(new Option('--sim <model>', 'experience model (llm: the LLM experience model on the --llm-url server)').choices(['retrieval', 'llm']).default('retrieval'))
    .option('--llm-url <url>', 'an OpenAI-compatible server (llama.cpp, Ollama, vLLM) for --sim llm, e.g. http://127.0.0.1:8080')
    .option('--llm-model <name>', 'model name sent to the --llm-url server (default: the one model it lists, if it lists one)')
    .option('--train-episodes <n>', 'real train-split episodes the model is built from', countArg(1, MAX_EPISODES), 300)
    .option('--test-episodes <n>', 'held-out real test-split episodes it is measured on', countArg(1, MAX_EPISODES), 100)
    .option('--false-success-episodes <n>', 'episodes per policy and task group for the sim-vs-real success rates (0 skips them)', countArg(0, MAX_EPISODES), 100)
    .option('--seed <s>', 'seed for tasks and policy noise', seedArg, 0)
    .option('--policy <p>', 'policy, or comma-separated mixture, producing both data sets: expert | noisy:EPS', policyMixture, 'noisy:0.3,noisy:1')
    .option('--json', 'print the report as JSON')
    .option('--out <file>', 'also write the report as JSON to this file (- for stdout)')
    .action(
      async (opts: {
        env?: string;
        envModule?: string;
        envTimeout?: number;
        sim: 'retrieval' | 'llm';
        trainEpisodes: number;
        testEpisodes: number;
        falseSuccessEpisodes: number;
        seed: number;
        policy: string;
        json?: boolean;
        out?: string;
        llmUrl?: string;
        llmModel?: string;
      }) => {
        if (opts.llmModel !== undefined && opts.llmUrl === undefined) throw new CliUsageError('--llm-model names a model of the server at --llm-url: give --llm-url URL too');
        if (opts.sim === 'llm' && opts.llmUrl === undefined) throw new CliUsageError('--sim llm needs an LLM: give --llm-url URL of an OpenAI-compatible server (llama.cpp, Ollama, vLLM), or use --sim retrieval');
        if (opts.sim !== 'llm' && opts.llmUrl !== undefined) throw new CliUsageError('--llm-url applies to --sim llm here');
        const target = opts.out !== undefined ? await resolveOutput(opts.out, { inputs: [opts.envModule] }) : null;
        const llm = opts.llmUrl !== undefined ? await connectLlm(opts.llmUrl, opts.llmModel) : null;
        const { llmUrl: _url, llmModel: _model, env: _env, envModule: _module, envTimeout: _timeout, ...rest } = opts;
        const env = chooseEnv(opts);
        const report = await runFidelity(env.spec, { ...rest, llm }).finally(() => env.dispose());
        const json = `${JSON.stringify(report, null, 2)}\n`;
        if (target) await writeOutput(target, json);
        if (target?.kind !== 'stdout') out(opts.json ? json : formatFidelity(report));
      },
    );

  program
    .command('bench')
    .description('Run benchmarks; print or write the figures as JSON, and optionally rewrite their tables in a markdown file.')
    .addArgument(program.createArgument('[suite]', 'which benchmark').choices([...BENCH_SUITES, 'all']).default('all'))
    .option('--json', 'print the results as JSON on stdout')
    .option('--out <file>', 'also write the results to this JSON file')
    .option('--markdown <file>', "rewrite each suite's generated table in this markdown file (e.g. BENCHMARKS.md)")
    .action(async (suite: BenchSuite | 'all', opts: { json?: boolean; out?: string; markdown?: string }) => {
      await runBench(suite, { json: opts.json === true, out: opts.out, markdown: opts.markdown, log: out });
    });

  // Training: train, eval, runs, export, experiment (src/cli/train.ts).
  addTrainingCommands(program, out, err);

  program
    .command('doctor')
    .description(
      'Check every run of the run store: run.json, snapshot.json and the checkpoint it names, and the committed rollouts.jsonl ' +
        'lines, one report line per problem. From a run that reads back, removes only debris no command reads (a dead process\'s lock, ' +
        'rollouts after the committed length, an unnamed checkpoint.next.bin, temporary files of dead processes); a damaged run is ' +
        'reported and nothing of it is changed. A lost snapshot.json is damage: --rebuild commits the complete lines of rollouts.jsonl ' +
        'again under a new snapshot.json (the original file kept when a line is left out), so the run can be listed, evaluated and ' +
        'exported (not resumed). Runs a live process trains are not touched. Exit status 1 when a damaged run remains. (The page\'s ' +
        'IndexedDB replay store has its own repair, repairStore in src/replay.)',
    )
    .showHelpAfterError(false)
    .addOption(new Option('--store <dir>', 'run store directory').default(DEFAULT_STORE_DIR))
    .option('--dry-run', 'list what would be removed; change nothing')
    .option('--rebuild [run]', 'rebuild this run (or, without an id, every run) whose snapshot.json is lost or unreadable')
    .action(async (opts: { store: string; dryRun?: boolean; rebuild?: string | true }) => {
      const report = await doctorStore(opts.store, opts.dryRun === true, opts.rebuild ?? null);
      out(printable(formatDoctor(report)));
      if (report.runs.some((r) => r.damaged.length > 0)) throw new CliExit(1);
    });

  return program;
}

/** Runs the CLI; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const out = (text: string): void => void process.stdout.write(text);
  const err = (text: string): void => void process.stderr.write(text);
  const program = buildProgram(out, err);
  installExitCleanup();
  try {
    await program.parseAsync(argv as string[]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof CliExit) {
      if (e.message) err(`${printable(e.message)}\n`);
      return e.code;
    }
    if (e instanceof JsonlError) {
      err(`dreamgym: ${printable(e.message)}\n`);
      return 1;
    }
    err(`dreamgym: error: ${printable(e instanceof Error ? e.message : String(e))}\n`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv);
}
