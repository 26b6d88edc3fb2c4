/**
 * The policy prior: log-probabilities of the candidate actions of a state, the `prior` term of
 * the policy head's logits. With an LLM, the frozen model scores all candidates in one forward
 * pass: the candidates are listed with single-token labels ("A. click[...]") and the labels'
 * logits are read through the LogitProcessor ({@link LabelLogitSource}); the fallback reads
 * `logprobs` with `top_logprobs` (at most 5 per pass, so it chains passes). Without an LLM: a
 * uniform or a lexical-overlap prior.
 */
import type { Observation } from '../core/types.ts';
import type { ChatCompletionMessageParam, ChatEngine } from './engine.ts';
import { LLMConfigError, LLMRequestError } from './errors.ts';
import { type LabelLogitSource, PRIOR_LABELS, labelGrammar, logSoftmax } from './logits.ts';

/** What the prior scores: the state of one decision. Candidates are `observation.actions`. */
export interface PriorContext {
  instruction: string;
  /** Earlier actions of this episode, oldest first. */
  history?: readonly { action: string }[];
  observation: Observation;
}

/** A prior over the admissible actions of a state. */
export interface ActionPrior {
  /** 'uniform', 'lexical' or 'llm'. */
  readonly kind: string;
  /** Natural-log probabilities, one per `ctx.observation.actions` entry, all finite. */
  score(ctx: PriorContext): Promise<Float32Array>;
}

/** The lowest log-probability a prior returns (keeps every value finite). */
export const MIN_LOG_PROB = -30;

function checkContext(ctx: PriorContext): readonly string[] {
  const actions = ctx?.observation?.actions;
  if (!Array.isArray(actions) || actions.length === 0) {
    throw new LLMConfigError(`a prior needs at least one candidate action, got ${JSON.stringify(actions)}`);
  }
  return actions;
}

function clampFinite(values: Float32Array): Float32Array {
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    values[i] = Number.isFinite(v) ? Math.max(MIN_LOG_PROB, v) : MIN_LOG_PROB;
  }
  return values;
}

/** -log(n) for each of `n` candidates. */
export function uniformLogProbs(n: number): Float32Array {
  if (!(Number.isInteger(n) && n >= 1)) throw new LLMConfigError(`uniformLogProbs needs an integer n >= 1, got ${n}`);
  return new Float32Array(n).fill(-Math.log(n));
}

/** The uniform prior (all candidates equally likely): adds nothing to the head's logits but a constant. */
export class UniformPrior implements ActionPrior {
  readonly kind = 'uniform';
  async score(ctx: PriorContext): Promise<Float32Array> {
    return uniformLogProbs(checkContext(ctx).length);
  }
}

const WORD_RE = /[\p{L}\p{N}]+/gu;
const STOP = new Set(['a', 'an', 'the', 'to', 'of', 'in', 'on', 'from', 'and', 'or', 'is', 'are', 'that', 'for', 'with', 'i', 'need', 'it', 'at', 'go', 'click', 'search']);
const NUMBER_RE = /^\p{N}+$/u;

function words(text: string): string[] {
  return (text.toLowerCase().match(WORD_RE) ?? []).filter((w) => !STOP.has(w));
}

/**
 * A candidate's content words. A number beside other words names an instance (`drawer 3`,
 * `pen 2`), which no instruction mentions, so it is left out; a number alone is a value the
 * instruction may ask for (`click[10]`). Counting instance numbers halved the overlap of
 * `go to cabinet 1` with "put a peppershaker in cabinet".
 */
function candidateWords(candidate: string): string[] {
  const w = words(candidate);
  return w.some((x) => !NUMBER_RE.test(x)) ? w.filter((x) => !NUMBER_RE.test(x)) : w;
}

/** Settings of {@link LexicalPrior}. */
export interface LexicalPriorOptions {
  /** Log-odds given to a candidate all of whose content words occur in the instruction (default 3). */
  strength?: number;
  /**
   * Log-odds taken off a candidate per earlier time this episode took it (default 2): without it
   * the prior loops (`click[red]` ten times, `go to drawer 1`, `go to drawer 2`, back and forth).
   */
  repeatPenalty?: number;
}

function checkWeight(name: string, value: number): number {
  if (!(Number.isFinite(value) && value >= 0)) throw new LLMConfigError(`lexical prior ${name} must be a finite number >= 0, got ${value}`);
  return value;
}

/**
 * Lexical-overlap log-probabilities: each candidate's score is the fraction of its content words
 * that occur in the instruction, times `strength`, less `repeatPenalty` per earlier time the
 * episode took it (`history`); then a log-softmax. No model needed: a word-level stand-in for an
 * LLM's common sense ("act on what the task names; do not repeat yourself").
 */
export function lexicalLogProbs(instruction: string, candidates: readonly string[], strength = 3, history: readonly string[] = [], repeatPenalty = 0): Float32Array {
  checkWeight('strength', strength);
  checkWeight('repeatPenalty', repeatPenalty);
  if (candidates.length === 0) throw new LLMConfigError('lexicalLogProbs needs at least one candidate, got 0');
  const target = new Set(words(instruction));
  const taken = new Map<string, number>();
  for (const a of history) taken.set(a, (taken.get(a) ?? 0) + 1);
  const scores = candidates.map((c) => {
    const w = candidateWords(c);
    const overlap = w.length === 0 ? 0 : w.filter((x) => target.has(x)).length / w.length;
    return strength * overlap - repeatPenalty * (taken.get(c) ?? 0);
  });
  return clampFinite(logSoftmax(scores));
}

/** The lexical-overlap prior with a penalty on repeated actions (see {@link lexicalLogProbs}). */
export class LexicalPrior implements ActionPrior {
  readonly kind = 'lexical';
  private readonly strength: number;
  private readonly repeatPenalty: number;
  constructor(options: LexicalPriorOptions = {}) {
    this.strength = checkWeight('strength', options.strength ?? 3);
    this.repeatPenalty = checkWeight('repeatPenalty', options.repeatPenalty ?? 2);
  }
  async score(ctx: PriorContext): Promise<Float32Array> {
    return lexicalLogProbs(ctx.instruction, checkContext(ctx), this.strength, (ctx.history ?? []).map((h) => h.action), this.repeatPenalty);
  }
}

/** How the LLM prior reads the label scores. */
export type PriorReadout = 'logit-processor' | 'logprobs' | 'auto';

/** Settings of {@link LLMPrior}; defaults in {@link DEFAULT_LLM_PRIOR_CONFIG}. */
export interface LLMPriorConfig {
  /** Model id for the requests (needed when the engine hosts several models). */
  model?: string;
  /** 'auto': the logit processor when a source is given, logprobs if it fails. */
  readout: PriorReadout;
  /** Characters of the observation text kept in the prompt. */
  maxStateChars: number;
  /** How many of the latest actions the prompt lists. */
  maxHistory: number;
}

/** Defaults of {@link LLMPriorConfig}. */
const DEFAULT_LLM_PRIOR_CONFIG: LLMPriorConfig = { readout: 'auto', maxStateChars: 2000, maxHistory: 3 };

/** Counters of an {@link LLMPrior}. */
export interface LLMPriorStats {
  /** States scored. */
  calls: number;
  /** Forward passes through the logit processor. */
  logitPasses: number;
  /** Requests through the logprobs fallback. */
  logprobPasses: number;
  /** Times the logit processor failed and logprobs took over. */
  fallbacks: number;
  latencyMs: number;
}

/** The prompt of the prior: the task, recent actions, the state, and the labelled candidates. */
export function priorMessages(ctx: PriorContext, labels: readonly string[], config: Pick<LLMPriorConfig, 'maxStateChars' | 'maxHistory'> = DEFAULT_LLM_PRIOR_CONFIG): ChatCompletionMessageParam[] {
  const actions = checkContext(ctx);
  if (labels.length < actions.length) throw new LLMConfigError(`priorMessages: ${actions.length} candidates but only ${labels.length} labels`);
  const state = ctx.observation.text.length > config.maxStateChars ? `${ctx.observation.text.slice(0, config.maxStateChars)}…` : ctx.observation.text;
  const recent = (ctx.history ?? []).slice(-config.maxHistory).map((h) => h.action);
  const lines = [`Task: ${ctx.instruction}`];
  if (recent.length > 0) lines.push(`Previous actions: ${recent.join(' | ')}`);
  lines.push('', 'Current state:', state, '', 'Candidate actions:');
  actions.forEach((a, i) => lines.push(`${labels[i]}. ${a}`));
  lines.push('', 'Which action should the agent take next? Answer with its letter only.');
  return [
    { role: 'system', content: 'You are an agent completing tasks in a text environment. You choose the best next action.' },
    { role: 'user', content: lines.join('\n') },
  ];
}

/**
 * The frozen LLM's prior. Up to 52 candidates are scored in one forward pass; more are scored in
 * chunks of 52, each chunk given an equal share of the probability mass.
 */
export class LLMPrior implements ActionPrior {
  readonly kind = 'llm';
  private readonly config: LLMPriorConfig;
  private useLogits: boolean;
  readonly stats: LLMPriorStats = { calls: 0, logitPasses: 0, logprobPasses: 0, fallbacks: 0, latencyMs: 0 };

  constructor(
    private readonly engine: ChatEngine,
    private readonly source: LabelLogitSource | null,
    config: Partial<LLMPriorConfig> = {},
  ) {
    this.config = { ...DEFAULT_LLM_PRIOR_CONFIG, ...config };
    const { readout, maxStateChars, maxHistory } = this.config;
    if (!['logit-processor', 'logprobs', 'auto'].includes(readout)) throw new LLMConfigError(`readout must be 'logit-processor', 'logprobs' or 'auto', got ${JSON.stringify(readout)}`);
    if (readout === 'logit-processor' && source === null) throw new LLMConfigError("readout 'logit-processor' needs a label-logit source (the worker's logit processor)");
    if (!(Number.isInteger(maxStateChars) && maxStateChars > 0)) throw new LLMConfigError(`maxStateChars must be a positive integer, got ${maxStateChars}`);
    if (!(Number.isInteger(maxHistory) && maxHistory >= 0)) throw new LLMConfigError(`maxHistory must be an integer >= 0, got ${maxHistory}`);
    this.useLogits = readout !== 'logprobs' && source !== null;
  }

  async score(ctx: PriorContext): Promise<Float32Array> {
    const actions = checkContext(ctx);
    const started = performance.now();
    this.stats.calls++;
    try {
      if (actions.length === 1) return new Float32Array([0]);
      const chunk = PRIOR_LABELS.length;
      const chunks = Math.ceil(actions.length / chunk);
      const out = new Float32Array(actions.length);
      for (let c = 0; c < chunks; c++) {
        const part = actions.slice(c * chunk, (c + 1) * chunk);
        const sub: PriorContext = { ...ctx, observation: { text: ctx.observation.text, actions: part } };
        const lp = part.length === 1 ? new Float32Array([0]) : await this.scoreChunk(sub);
        lp.forEach((v, i) => (out[c * chunk + i] = v - Math.log(chunks)));
      }
      return clampFinite(out);
    } finally {
      this.stats.latencyMs += performance.now() - started;
    }
  }

  private async scoreChunk(ctx: PriorContext): Promise<Float32Array> {
    const n = ctx.observation.actions.length;
    const labels = PRIOR_LABELS.slice(0, n);
    const messages = priorMessages(ctx, labels, this.config);
    if (this.useLogits && this.source) {
      try {
        const logits = await this.source.labelLogits({ messages, ...(this.config.model !== undefined ? { model: this.config.model } : {}) }, labels);
        this.stats.logitPasses++;
        return logSoftmax(logits);
      } catch (error) {
        if (this.config.readout === 'logit-processor') throw error;
        this.stats.fallbacks++;
        this.useLogits = false;
      }
    }
    return this.scoreByLogprobs(messages, labels);
  }

  /**
   * Chains passes of `top_logprobs` (at most 5): each pass constrains the answer to the labels
   * not yet scored, so pass k's log-probs are conditional on "none of the earlier ones"; the
   * remaining mass of the earlier passes turns them into unconditional ones.
   */
  private async scoreByLogprobs(messages: ChatCompletionMessageParam[], labels: readonly string[]): Promise<Float32Array> {
    const out = new Float32Array(labels.length).fill(Number.NaN);
    let remaining = labels.map((label, index) => ({ label, index }));
    let logMass = 0;
    while (remaining.length > 0) {
      if (remaining.length === 1) {
        out[(remaining[0] as { index: number }).index] = logMass;
        break;
      }
      const top = Math.min(5, remaining.length);
      const completion = await this.engine.chatCompletion({
        messages,
        ...(this.config.model !== undefined ? { model: this.config.model } : {}),
        max_tokens: 1,
        temperature: 1,
        top_p: 1,
        repetition_penalty: 1,
        frequency_penalty: 0,
        presence_penalty: 0,
        logprobs: true,
        top_logprobs: top,
        response_format: { type: 'grammar', grammar: labelGrammar(remaining.map((r) => r.label)) },
      });
      this.stats.logprobPasses++;
      const entries = completion.choices[0]?.logprobs?.content?.[0]?.top_logprobs ?? [];
      const seen: { index: number; logprob: number }[] = [];
      for (const e of entries) {
        const r = remaining.find((x) => x.label === e.token.trim());
        if (r && Number.isFinite(e.logprob) && !seen.some((s) => s.index === r.index)) seen.push({ index: r.index, logprob: e.logprob });
      }
      if (seen.length === 0) throw new LLMRequestError(`the logprobs prior got no label among the top log-probabilities (${JSON.stringify(entries.map((e) => e.token))})`);
      let massSeen = 0;
      for (const s of seen) {
        out[s.index] = logMass + s.logprob;
        massSeen += Math.exp(s.logprob);
      }
      logMass += Math.log(Math.max(1e-12, 1 - massSeen));
      remaining = remaining.filter((r) => !seen.some((s) => s.index === r.index));
      if (logMass < MIN_LOG_PROB) {
        for (const r of remaining) out[r.index] = MIN_LOG_PROB;
        break;
      }
    }
    return out;
  }
}
