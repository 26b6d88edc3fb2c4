/**
 * How the setup panel words the model catalogue: each model's size (parameters, GPU memory, the
 * download estimate), whether it is cached, why it cannot run here; the device in a sentence; and
 * which model to offer first. Pure functions over `ModelView`s (the page's catalogue entries).
 */
import { DEFAULT_CHAT_PREFERENCES, DEFAULT_EMBEDDING_PREFERENCES, type DeviceFacts } from '../../llm/catalogue.ts';
import type { LoadTimings } from '../../llm/load-timings.ts';
import type { ModelView } from '../state/llm-state.ts';

/** `359 MB`, `1.1 GB`. */
export function formatMB(mb: number): string {
  return mb >= 1000 ? `${(mb / 1000).toFixed(1)} GB` : `${Math.round(mb)} MB`;
}

/** `135M`, `1.5B`. */
export function formatParameters(n: number): string {
  return n >= 1e9 ? `${Number((n / 1e9).toFixed(1))}B` : `${Math.round(n / 1e6)}M`;
}

/** The model's size and cache state in a phrase: `1.5B parameters, 1060 MB GPU memory, download about 880 MB, cached`. */
export function modelFacts(m: ModelView): string {
  const parts: string[] = [];
  if (m.parameters !== null) parts.push(`${formatParameters(m.parameters)} parameters`);
  parts.push(m.vramMB === null ? 'GPU memory unknown' : `${formatMB(m.vramMB)} GPU memory`);
  if (m.cached) parts.push('cached, no download');
  else parts.push(m.downloadMB === null ? 'download size unknown' : `download about ${formatMB(m.downloadMB)}`);
  return parts.join(', ');
}

/** The text of a model's option in a list: its id, its facts and, when it cannot run here, why. */
export function modelOptionText(m: ModelView): string {
  const text = `${m.modelId} (${modelFacts(m)})`;
  if (!m.usable) return `${text}: cannot run here, ${m.reasons.join('; ')}`;
  return m.experienceModelProblem ? `${text}: not for the experience model, ${m.experienceModelProblem}` : text;
}

/** Models of `kind`: usable ones first, each group by GPU memory, then by id. */
export function modelsOfKind(models: readonly ModelView[], kind: 'chat' | 'embedding'): ModelView[] {
  return models
    .filter((m) => m.kind === kind)
    .sort((a, b) => Number(b.usable) - Number(a.usable) || (a.vramMB ?? Infinity) - (b.vramMB ?? Infinity) || a.modelId.localeCompare(b.modelId));
}

/**
 * The model to offer first: a usable model already cached (no download), else the first usable
 * of the catalogue's preferences, else the smallest usable one; '' when none can run here.
 */
export function defaultModel(models: readonly ModelView[], kind: 'chat' | 'embedding'): string {
  const usable = modelsOfKind(models, kind).filter((m) => m.usable);
  const preferences = kind === 'chat' ? DEFAULT_CHAT_PREFERENCES : DEFAULT_EMBEDDING_PREFERENCES;
  const rank = (id: string): number => {
    const at = preferences.indexOf(id);
    return at < 0 ? preferences.length : at;
  };
  // Stable sort of the smallest-first list: cached first, then by preference.
  const ranked = [...usable].sort((a, b) => Number(b.cached) - Number(a.cached) || rank(a.modelId) - rank(b.modelId));
  return ranked[0]?.modelId ?? '';
}

/** The device as the catalogue sees it, in a sentence. */
export function deviceSummary(device: DeviceFacts): string {
  if (!device.webgpu) return 'This browser offers no WebGPU, so no local LLM can run here: use the no-download experience model.';
  const adapter = [device.vendor, device.architecture].filter((x) => x).join(' ');
  const parts = [`WebGPU adapter${adapter ? ` ${adapter}` : ''}${device.isFallbackAdapter ? ' (a software fallback: models run, but very slowly)' : ''}`];
  parts.push(device.shaderF16 ? 'with shader-f16 (f16 models can run)' : 'without shader-f16 (only f32 models, q4f32 or q0f32, can run)');
  return `${parts.join(', ')}.`;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * Where a load's time went, in a sentence: `Loaded in 14.2 s: download 9.8 s, loading from the
 * cache 1.1 s, compiling GPU shaders 3.0 s, setup and the rest 0.3 s.` Phases that took no time are left out.
 */
export function loadTimingsText(t: LoadTimings): string {
  const rest = Math.max(0, t.totalMs - t.fetchMs - t.cacheLoadMs - t.shaderMs);
  const parts = [
    ...(t.fetchMs > 0 ? [`download ${seconds(t.fetchMs)}`] : []),
    ...(t.cacheLoadMs > 0 ? [`loading from the cache ${seconds(t.cacheLoadMs)}`] : []),
    ...(t.shaderMs > 0 ? [`compiling GPU shaders ${seconds(t.shaderMs)}`] : []),
    `setup and the rest ${seconds(rest)}`,
  ];
  return `Loaded in ${seconds(t.totalMs)}: ${parts.join(', ')}.`;
}
