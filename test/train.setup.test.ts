/**
 * prepareRun (src/train/setup.ts): what it builds from a configuration and its options. With no
 * LLM the LLM parts are refused; with one, the LLM experience model, prior and task generator run
 * on it (the prior on label logits when the LLM offers them); a given embedder makes the features.
 */
import { describe, expect, it } from 'vitest';
import type { Embedder } from '../src/core/embedding.ts';
import { LLMExperienceModel } from '../src/experience/llm.ts';
import { RetrievalExperienceModel } from '../src/experience/retrieval/model.ts';
import { LLMTaskGenerator, RecombinationTaskGenerator } from '../src/curriculum/generator.ts';
import { LexicalPrior, LLMPrior } from '../src/llm/prior.ts';
import { AUTO_GROUNDING_RIGHT, groundingPhrase, parseTrainingConfig, TrainingConfigError, type NoisySource, type TrainingConfigInput } from '../src/train/config.ts';
import { TrainingSetupError, validationTasks } from '../src/train/loop.ts';
import type { Task } from '../src/core/types.ts';
import type { HistoryStep } from '../src/experience/types.ts';
import { offlineSeedData, prepareRun, recordedSeedData, retrievalSimulator, simulatorGrounding } from '../src/train/setup.ts';
import type { AnyEnvSpec } from '../src/envs/spec.ts';
import { getEnvSpec, registerEnvSpec, unregisterEnvSpec } from '../src/envs/registry.ts';
import { loadEnvModule } from '../src/cli/module-host.ts';
import { echoScript, ScriptedEngine } from './fixtures/scripted-engine.ts';

const TINY: TrainingConfigInput = { env: 'shop', mode: 'dreamgym', offline: { expertEpisodes: 4, noisyEpisodes: 2, extraTasks: 0 }, evalEpisodes: 2, policy: { embeddingDim: 32 } };

/** An embedder of width 8 that counts what it embedded. */
class CountingEmbedder implements Embedder {
  readonly id = 'counting';
  readonly dim = 8;
  texts = 0;
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.texts += texts.length;
    return texts.map((t) => {
      const v = new Float32Array(8);
      v[t.length % 8] = 1;
      return v;
    });
  }
}

describe('prepareRun', () => {
  it("builds the retrieval simulator grounded only when the config asks for it (grounding: 'calibrated')", async () => {
    const offline = { expertEpisodes: 16, noisyEpisodes: 8, extraTasks: 0 };
    const plain = await prepareRun(parseTrainingConfig({ ...TINY, offline }));
    const grounded = await prepareRun(parseTrainingConfig({ ...TINY, offline, grounding: 'calibrated' }));
    try {
      expect((plain.deps.experience as RetrievalExperienceModel).grounding).toBeNull();
      const report = (grounded.deps.experience as RetrievalExperienceModel).grounding;
      expect(report).not.toBeNull();
      expect(report?.heldOutSteps).toBeGreaterThan(0);
      // What the run record and the page say of it.
      expect(simulatorGrounding(parseTrainingConfig({ ...TINY, offline }), plain)).toEqual({ mode: 'off', grounded: false });
      expect(simulatorGrounding(parseTrainingConfig({ ...TINY, offline, grounding: 'calibrated' }), grounded)).toEqual({ mode: 'calibrated', grounded: true });
      expect(groundingPhrase({ mode: 'calibrated', grounded: true })).toBe('simulator grounded');
      expect(simulatorGrounding(parseTrainingConfig({ ...TINY, mode: 'real' }), { experience: null, autoGrounding: null })).toBeNull();
    } finally {
      plain.dispose();
      grounded.dispose();
    }
    expect(() => parseTrainingConfig({ ...TINY, grounding: 'maybe' as 'off' })).toThrow(/grounding/);
  });

  it("validates a grounded run in a simulator that does not replay the validation tasks' own episodes", async () => {
    const offline = { expertEpisodes: 16, noisyEpisodes: 8, extraTasks: 0 };
    const plain = await prepareRun(parseTrainingConfig({ ...TINY, offline, validation: { tasks: 4 } }));
    const grounded = await prepareRun(parseTrainingConfig({ ...TINY, offline, grounding: 'calibrated', validation: { tasks: 4 } }));
    try {
      // The ungrounded simulator is validated where it replays recorded episodes, by design.
      expect(plain.deps.validationExperience).toBeUndefined();
      const main = grounded.deps.experience as RetrievalExperienceModel;
      const validating = grounded.deps.validationExperience as RetrievalExperienceModel;
      expect(validating).toBeInstanceOf(RetrievalExperienceModel);
      expect(validating).not.toBe(main);
      expect(validating.grounding).toEqual(main.grounding);
      const ids = new Set(validationTasks(grounded.deps.offline, 4).map((t) => t.id));
      expect(ids.size).toBe(4);
      let replayed = 0;
      let asFact = 0;
      for (const trajectory of grounded.deps.offline.trajectories.filter((t) => ids.has(t.taskId) && t.success)) {
        const task = grounded.deps.offline.tasks.find((t) => t.id === trajectory.taskId) as Task;
        const history: HistoryStep[] = [];
        for (const step of trajectory.steps) {
          const request = { task, history: history.slice(), observation: step.observation, action: step.action, demos: [] };
          // Support 1 marks a recorded fact (or an invalid action, which these recorded steps are not).
          if (step.valid && (await main.step(request)).grounding?.support === 1) replayed++;
          if (step.valid && (await validating.step(request)).grounding?.support === 1) asFact++;
          history.push({ observation: step.observation, action: step.action });
        }
      }
      expect(replayed).toBeGreaterThan(0);
      expect(asFact).toBe(0);
    } finally {
      plain.dispose();
      grounded.dispose();
    }
  });

  it('without an LLM: retrieval, hashed features of the configured width, recombination tasks', async () => {
    const run = await prepareRun(parseTrainingConfig(TINY));
    try {
      expect(run.deps.experience).toBeInstanceOf(RetrievalExperienceModel);
      expect(run.deps.generator).toBeInstanceOf(RecombinationTaskGenerator);
      expect(run.deps.featurizer.dim).toBe(32);
      expect(run.deps.featurizer.embedder.id).toMatch(/hash/);
    } finally {
      run.dispose();
    }
    // The lexical prior takes the configured repeat penalty (default 2) off an action per earlier time it was taken.
    const observation = { text: '', actions: ['click[red]', 'click[blue]'] };
    for (const [repeatPenalty, gap] of [[undefined, 2], [4, 4], [0, 0]] as const) {
      const other = await prepareRun(parseTrainingConfig({ ...TINY, ...(repeatPenalty === undefined ? {} : { repeatPenalty }) }));
      try {
        const fresh = await (other.deps.prior as LexicalPrior).score({ instruction: 'a red mug', observation });
        const once = await (other.deps.prior as LexicalPrior).score({ instruction: 'a red mug', history: [{ action: 'click[red]' }], observation });
        expect(((fresh[0] as number) - (fresh[1] as number)) - ((once[0] as number) - (once[1] as number))).toBeCloseTo(gap, 5);
      } finally {
        other.dispose();
      }
    }
    await expect(prepareRun(parseTrainingConfig({ ...TINY, sim: 'llm' }))).rejects.toThrow(TrainingSetupError);
    await expect(prepareRun(parseTrainingConfig({ ...TINY, prior: 'llm' }))).rejects.toThrow(/the LLM prior needs an LLM/);
  });

  it('with an LLM and label logits: the LLM experience model, prior on label logits, LLM task generator', async () => {
    const engine = new ScriptedEngine({ chat: echoScript, logits: () => ({ A: 3, B: 0 }) });
    const labelLogits = { calls: 0, labelLogits: async (_r: unknown, labels: readonly string[]) => (labelLogits.calls++, new Float32Array(labels.map((_, i) => (i === 0 ? 3 : 0)))) };
    const run = await prepareRun(parseTrainingConfig({ ...TINY, sim: 'llm', prior: 'llm' }), { llm: { engine, model: 'm', labelLogits } });
    expect(run.deps.experience).toBeInstanceOf(LLMExperienceModel);
    expect(run.deps.generator).toBeInstanceOf(LLMTaskGenerator);
    const prior = run.deps.prior as LLMPrior;
    expect(prior).toBeInstanceOf(LLMPrior);
    const lp = await prior.score({ instruction: 'buy', observation: { text: 's', actions: ['click[a]', 'click[b]'] } });
    expect(lp[0]).toBeGreaterThan(lp[1] as number);
    expect(labelLogits.calls).toBe(1);
    expect(prior.stats).toMatchObject({ logitPasses: 1, logprobPasses: 0 });
    // Without label logits the prior reads logprobs from chat completions.
    const plain = await prepareRun(parseTrainingConfig({ ...TINY, prior: 'llm' }), { llm: { engine, model: 'm' } });
    await (plain.deps.prior as LLMPrior).score({ instruction: 'buy', observation: { text: 's', actions: ['click[a]', 'click[b]'] } });
    expect((plain.deps.prior as LLMPrior).stats).toMatchObject({ logitPasses: 0, logprobPasses: 1 });
    run.dispose();
    plain.dispose();
  });

  it("sizes the LLM experience model's prompts to the chat model's context window, and refuses one too small", async () => {
    const engine = new ScriptedEngine({ chat: echoScript });
    const config = parseTrainingConfig({ ...TINY, sim: 'llm' });
    const run = await prepareRun(config, { llm: { engine, model: 'm', contextWindowSize: 4096 } });
    expect((run.deps.experience as LLMExperienceModel).config.contextWindowTokens).toBe(4096);
    expect((run.deps.experience as LLMExperienceModel).stats.promptBudgetChars).toBeLessThan(4096 * 4);
    run.dispose();
    await expect(prepareRun(config, { llm: { engine, model: 'm', contextWindowSize: 1024 } })).rejects.toThrow(/context window of 1024 tokens is too small for the experience model/);
  });

  it('features come from the given embedder, at its width', async () => {
    const embedder = new CountingEmbedder();
    const run = await prepareRun(parseTrainingConfig(TINY), { embedder });
    try {
      expect(run.deps.featurizer.embedder).toBe(embedder);
      expect(run.deps.featurizer.dim).toBe(8);
      const [decision] = await run.deps.featurizer.decisions([{ instruction: 'i want a red shoe', observation: { text: 'Page', actions: ['search[red shoe]', 'click[back]'] } }]);
      expect(embedder.texts).toBeGreaterThan(0);
      expect(decision?.state.length).toBe(run.deps.featurizer.stateDim);
    } finally {
      run.dispose();
    }
  });
});

describe('offline seed data', () => {
  it("records the environment's demonstrator where it has one, and pools only the first demonstrated tasks", () => {
    for (const env of ['shop', 'household'] as const) {
      const config = parseTrainingConfig({ env, mode: 'sft', seed: 2, offline: { expertEpisodes: 10, noisyEpisodes: 4, extraTasks: 3, poolDemonstrations: 4 } });
      const data = offlineSeedData(getEnvSpec(env), config);
      const demos = data.trajectories.filter((t) => data.expertIds.has(t.id));
      expect(demos).toHaveLength(10);
      expect(demos.every((t) => t.id.endsWith(':demonstrator'))).toBe(true);
      expect(demos.filter((t) => t.success).length).toBeGreaterThanOrEqual(8);
      const pooled = new Set(data.poolTasks?.map((t) => t.id));
      const demoTasks = demos.map((t) => t.taskId);
      expect(demoTasks.filter((id) => pooled.has(id))).toEqual(demoTasks.slice(0, 4));
      // Every other offline task, and every extra task, is in the pool.
      for (const t of data.tasks) if (!demoTasks.includes(t.id)) expect(pooled.has(t.id)).toBe(true);
      for (const t of data.extraTasks ?? []) expect(pooled.has(t.id)).toBe(true);
      expect(data.poolTasks).toHaveLength(data.tasks.length - 6 + (data.extraTasks?.length ?? 0));
    }
  });

  it("records the noisy:0.3 episodes with the goal-blind demonstrator where there is one (the expert's only on request): the expert's succeed blind", async () => {
    // Calendar's expert reads the free slot from the goal and books without viewing a calendar, and succeeds.
    const m = loadEnvModule('src/envs/calendar/index.ts');
    registerEnvSpec(m.spec);
    try {
      const seedData = (noisySource?: NoisySource) => {
        const config = parseTrainingConfig({ env: m.spec.name, mode: 'sft', seed: 1, offline: { expertEpisodes: 1, noisyEpisodes: 60, extraTasks: 0, ...(noisySource ? { noisySource } : {}) } });
        return offlineSeedData(m.spec, config);
      };
      const blindWins = (data: ReturnType<typeof seedData>) => data.trajectories.filter((t) => !data.expertIds.has(t.id) && t.success && !t.steps.some((s) => s.action.startsWith('view '))).length;
      const byDefault = seedData();
      expect(byDefault.trajectories.filter((t) => t.id.endsWith(':demonstrator:0.3'))).toHaveLength(30);
      expect(byDefault.trajectories.filter((t) => t.id.endsWith(':noisy:0.3'))).toHaveLength(0);
      expect(blindWins(byDefault)).toBe(0);
      expect(seedData('demonstrator').trajectories).toEqual(byDefault.trajectories);
      const informed = seedData('expert');
      expect(informed.trajectories.filter((t) => t.id.endsWith(':noisy:0.3'))).toHaveLength(30);
      expect(blindWins(informed)).toBeGreaterThanOrEqual(10);
    } finally {
      unregisterEnvSpec(m.spec);
      await m.dispose();
    }
  });

  it("falls back to the expert's noisy episodes where there is no demonstrator", () => {
    const spec = getEnvSpec('shop');
    const { demonstrator: _demonstrator, ...blind } = spec;
    const config = parseTrainingConfig({ env: 'shop', mode: 'sft', seed: 1, offline: { expertEpisodes: 2, noisyEpisodes: 8, extraTasks: 0 } });
    expect(offlineSeedData(blind as AnyEnvSpec, config).trajectories.filter((t) => t.id.endsWith(':noisy:0.3'))).toHaveLength(4);
    expect(offlineSeedData(spec, config).trajectories.filter((t) => t.id.endsWith(':demonstrator:0.3'))).toHaveLength(4);
  });
});


/** The environment with an expert that throws: whatever asks it fails the test. */
function expertThrows(spec: AnyEnvSpec): AnyEnvSpec & { asked: number } {
  const wrapped = {
    ...spec,
    asked: 0,
    create: () => {
      const env = spec.create();
      return {
        get name() {
          return env.name;
        },
        get maxSteps() {
          return env.maxSteps;
        },
        reset: (task: Parameters<typeof env.reset>[0]) => env.reset(task),
        step: (action: string) => env.step(action),
        expertAction: (): string => {
          wrapped.asked++;
          throw new Error('the goal-reading expert was asked');
        },
      };
    },
  };
  return wrapped;
}

describe('recorded seed data (a log of mixed quality)', () => {
  it('is N episodes of the noisy goal-blind demonstrator, successes and failures kept, and nothing else; the expert is never asked', () => {
    for (const env of ['shop', 'household'] as const) {
      const spec = expertThrows(getEnvSpec(env));
      const config = parseTrainingConfig({ env, mode: 'sft', seed: 1, offline: { recorded: 30 } });
      const data = offlineSeedData(spec, config);
      expect(spec.asked).toBe(0);
      expect(data.trajectories).toHaveLength(30);
      expect(data.tasks).toHaveLength(30);
      expect(new Set(data.trajectories.map((t) => t.taskId))).toEqual(new Set(data.tasks.map((t) => t.id)));
      expect(data.trajectories.every((t) => t.id.endsWith(':demonstrator:0.5') && t.source === 'offline')).toBe(true);
      // Mixed outcomes, both kept.
      const wins = data.trajectories.filter((t) => t.success).length;
      expect(wins, env).toBeGreaterThan(0);
      expect(wins, env).toBeLessThan(30);
      // Every episode is a demonstration candidate; RL's pool is their tasks and no others.
      expect(data.expertIds.size).toBe(30);
      expect(data.extraTasks).toEqual([]);
      expect(data.poolTasks?.map((t) => t.id)).toEqual(data.tasks.map((t) => t.id));
      expect(data.tasks.every((t) => t.split === 'train')).toBe(true);
      // Deterministic for the seed; another seed records other tasks.
      expect(recordedSeedData(spec, config).trajectories).toEqual(data.trajectories);
      const other = recordedSeedData(spec, parseTrainingConfig({ env, mode: 'sft', seed: 2, offline: { recorded: 30 } }));
      expect(other.tasks.map((t) => t.id)).not.toEqual(data.tasks.map((t) => t.id));
    }
  });

  it('follows the configured noise: none records the demonstrator itself, all of it random steps', () => {
    const spec = expertThrows(getEnvSpec('shop'));
    const rate = (noise: number) => {
      const data = offlineSeedData(spec, parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 40, recordedNoise: noise } }));
      return data.trajectories.filter((t) => t.success).length / data.trajectories.length;
    };
    const [clean, half, random] = [rate(0), rate(0.5), rate(1)];
    expect(clean).toBeGreaterThan(half);
    expect(half).toBeGreaterThan(random);
    expect(spec.asked).toBe(0);
  });

  it('grounds the simulator on the recorded episodes alone', async () => {
    const config = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft', offline: { recorded: 12 }, evalEpisodes: 2, policy: { embeddingDim: 32 } });
    const run = await prepareRun(config);
    try {
      expect(run.deps.offline.trajectories).toHaveLength(12);
      expect(run.experience?.size).toBe(run.deps.offline.trajectories.reduce((n, t) => n + t.steps.length, 0));
    } finally {
      run.dispose();
    }
  });

  it("grounds it automatically only where it predicts few held-out recorded steps right (grounding: 'auto', the default for recorded logs)", async () => {
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', offline: { recorded: 25 } }).grounding).toBe('auto');
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym' }).grounding).toBe('off');
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', offline: { recorded: 25 }, grounding: 'off' }).grounding).toBe('off');
    // A shop log: its simulator predicts a good share of held-out steps right and answers every step.
    const shop = recordedSeedData(getEnvSpec('shop'), parseTrainingConfig({ env: 'shop', mode: 'dreamgym', offline: { recorded: 16 } }));
    const { model: calibrated, auto: none } = await retrievalSimulator(shop, getEnvSpec('shop'), 'calibrated');
    const { model: taught, auto: taughtAuto } = await retrievalSimulator(shop, getEnvSpec('shop'), 'auto');
    // A maze the log never walked twice: every next state is one no other episode shows.
    const tasks: Task[] = Array.from({ length: 12 }, (_, i) => ({ id: `m${i}`, env: 'maze', instruction: `reach the exit of maze ${i}`, goal: null, split: 'train', origin: 'seed' }));
    const trajectories = tasks.map((task, i) => ({
      id: `r${i}`,
      taskId: task.id,
      env: 'maze',
      source: 'offline' as const,
      steps: Array.from({ length: 20 }, (_, k) => ({ observation: { text: `Maze ${i}: you stand in room ${(i * 31 + k * 17) % 101} with doors ${['north', 'east', 'west'].slice(0, 1 + ((i + k) % 3)).join(' and ')}.`, actions: ['north', 'east', 'west'] }, action: ['north', 'east', 'west'][(i * k) % 3] as string, reward: 0, done: k === 19, valid: true })),
      success: false,
      reward: 0,
    }));
    const { model: misled, auto: misledAuto } = await retrievalSimulator({ tasks, trajectories }, {}, 'auto');
    try {
      expect(calibrated.grounding?.heldOutRight).toBeGreaterThanOrEqual(AUTO_GROUNDING_RIGHT);
      expect(none).toBeNull();
      expect(taught.grounding).toBeNull();
      expect(taughtAuto).toEqual({ grounded: false, heldOutRight: calibrated.grounding?.heldOutRight });
      expect(simulatorGrounding({ grounding: 'auto' }, { experience: misled, autoGrounding: misledAuto })).toEqual({ mode: 'auto', grounded: true, heldOutRight: misled.grounding?.heldOutRight });
      expect(groundingPhrase({ mode: 'auto', ...(misledAuto as { grounded: boolean; heldOutRight: number }) })).toMatch(/^simulator grounded \(\d+% of held-out recorded steps predicted right, under 10%: unknown steps halt\)$/);
      expect(misledAuto?.grounded).toBe(true);
      expect(misled.grounding).not.toBeNull();
      expect(misled.grounding?.heldOutRight).toBeLessThan(AUTO_GROUNDING_RIGHT);
    } finally {
      for (const m of [calibrated, taught, misled]) m.dispose();
    }
  });

  it('validates no synthetic phase by default (its successes are the cloning data), unless asked', () => {
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft', offline: { recorded: 25 } }).validation.tasks).toBe(0);
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft', offline: { recorded: 25 }, validation: { tasks: 12 } }).validation.tasks).toBe(12);
    expect(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft' }).validation.tasks).toBe(50);
  });

  it('refuses a bad count or noise with the value, and an environment without a demonstrator', () => {
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: -3 } })).toThrow(/offline\.recorded.*got -3/);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 2.5 } })).toThrow(TrainingConfigError);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 2_000_000 } })).toThrow(/got 2000000/);
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 5, recordedNoise: 1.5 } })).toThrow(/offline\.recordedNoise.*got 1\.5/);
    const { demonstrator: _d, ...bare } = getEnvSpec('shop');
    expect(() => offlineSeedData(bare, parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 5 } }))).toThrow(/recorded episodes \(5\).*shop has none/);
  });
});

describe('recorded successes set aside for model selection', () => {
  it('leave the cloning data, the grounding and the pool, and a synthetic phase validates on them with the recorded criterion', async () => {
    for (const env of ['shop', 'household'] as const) {
      const spec = getEnvSpec(env);
      const all = offlineSeedData(spec, parseTrainingConfig({ env, mode: 'sft', seed: 1, offline: { recorded: 30, recordedSelection: 0 } }));
      expect(all.selection).toBeUndefined();
      const config = parseTrainingConfig({ env, mode: 'dreamgym', warmStart: 'sft', seed: 1, offline: { recorded: 30, recordedSelection: 0.2 } });
      const data = offlineSeedData(spec, config);
      const wins = all.trajectories.filter((t) => t.success).length;
      const aside = data.selection?.trajectories ?? [];
      expect(aside, env).toHaveLength(Math.max(2, Math.round(0.2 * wins)));
      expect(aside.every((t) => t.success)).toBe(true);
      // The same log, split: nothing set aside is cloned, grounds the simulator or joins RL's pool.
      const asideTasks = new Set(aside.map((t) => t.taskId));
      expect(data.trajectories.length + aside.length).toBe(30);
      expect(data.trajectories.some((t) => asideTasks.has(t.taskId))).toBe(false);
      expect([...data.expertIds].some((id) => aside.some((t) => t.id === id))).toBe(false);
      expect(data.poolTasks?.some((t) => asideTasks.has(t.id))).toBe(false);
      expect(data.tasks.some((t) => asideTasks.has(t.id))).toBe(false);
      // Selection runs where they are: validated, and by the recorded criterion.
      expect(config.validation.tasks).toBeGreaterThan(0);
      expect(config.validation.criterion).toBe('recorded');
      // The same split in every mode (an experiment's warm arms resume from cloning's snapshot).
      expect(offlineSeedData(spec, parseTrainingConfig({ env, mode: 'sft', seed: 1, offline: { recorded: 30, recordedSelection: 0.2 } })).trajectories).toEqual(data.trajectories);
    }
    const run = await prepareRun(parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft', seed: 1, offline: { recorded: 30, recordedSelection: 0.2 }, evalEpisodes: 2, policy: { embeddingDim: 32 } }));
    try {
      expect(run.experience?.size).toBe(run.deps.offline.trajectories.reduce((n, t) => n + t.steps.length, 0));
      expect(run.deps.offline.selection?.trajectories.length).toBeGreaterThanOrEqual(2);
    } finally {
      run.dispose();
    }
  });

  it('are none where the log has too few successes to spare, and none with a share of 0', () => {
    const spec = getEnvSpec('shop');
    expect(offlineSeedData(spec, parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 3, recordedNoise: 1, recordedSelection: 0.5 } })).selection).toBeUndefined();
    const off = parseTrainingConfig({ env: 'shop', mode: 'dreamgym', warmStart: 'sft', offline: { recorded: 25, recordedSelection: 0 } });
    expect(off.validation.tasks).toBe(0);
    expect(off.validation.criterion).toBe('simulator');
    expect(() => parseTrainingConfig({ env: 'shop', mode: 'sft', offline: { recorded: 5, recordedSelection: 0.9 } })).toThrow(/recordedSelection/);
  });
});

describe('held-out demonstrations for model selection', () => {
  const withValidation = { ...TINY, validation: { tasks: 4, recorded: 6 } } as const;

  it('are not recorded with the simulator criterion (the default from scratch), so no validation scores them', async () => {
    const config = parseTrainingConfig(withValidation);
    expect(config.validation.criterion).toBe('simulator');
    // After behaviour cloning the recorded criterion is the default, and its demonstrations are recorded; an explicit choice wins.
    const warm = parseTrainingConfig({ ...withValidation, warmStart: 'sft' });
    expect(warm.validation.criterion).toBe('recorded');
    expect(offlineSeedData(getEnvSpec('shop'), warm).selection?.trajectories.length).toBeGreaterThan(0);
    expect(parseTrainingConfig({ ...withValidation, warmStart: 'sft', validation: { ...withValidation.validation, criterion: 'simulator' } }).validation.criterion).toBe('simulator');
    expect(offlineSeedData(getEnvSpec('shop'), config).selection).toBeUndefined();
    const run = await prepareRun(config);
    try {
      expect(run.deps.offline.selection).toBeUndefined();
    } finally {
      run.dispose();
    }
  });

  it('are recorded with the recorded criterion, and with the simulator one when the caller asks (the validation probe)', async () => {
    const spec = getEnvSpec('shop');
    const recorded = offlineSeedData(spec, parseTrainingConfig({ ...withValidation, validation: { ...withValidation.validation, criterion: 'recorded' } })).selection;
    expect(recorded?.trajectories.length).toBeGreaterThan(0);
    expect(recorded?.trajectories.length).toBeLessThanOrEqual(6);
    const asked = await prepareRun(parseTrainingConfig(withValidation), { selection: true });
    try {
      expect(asked.deps.offline.selection?.trajectories).toEqual(recorded?.trajectories);
    } finally {
      asked.dispose();
    }
    // Not in a mode without a synthetic phase, whatever is asked.
    expect(offlineSeedData(spec, parseTrainingConfig({ ...withValidation, mode: 'sft' }), { selection: true }).selection).toBeUndefined();
  });
});
