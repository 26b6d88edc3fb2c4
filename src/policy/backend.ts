/**
 * Choosing the TensorFlow.js backend the policy trains on, and recovering from a lost GPU device.
 *
 * Rule (see DESIGN.md, "Facts established on these machines"): WebGPU when an adapter exists and
 * is not a fallback (software) adapter; else wasm (multi-threaded when the page is
 * cross-origin isolated); else the pure-JS cpu backend. SwiftShader, the CPU emulator that
 * headless Chromium exposes, is a fallback adapter and is ~60x slower than wasm, so `auto`
 * never picks it; it is still used when WebGPU is asked for by name (tests, benchmarks).
 * The choice is overridable by configuration (`prefer`) and, in the page, by a URL parameter
 * (`?backend=wasm`, see {@link backendFromUrl}).
 */
import * as tf from '@tensorflow/tfjs';
import { installRowCopyGather } from './wasm-gather.ts';
import { BACKEND_NAMES, BackendError, parseBackendPreference, type BackendName, type BackendPreference } from './backend-preference.ts';

export { BACKEND_NAMES, BackendError, backendFromUrl, parseBackendPreference, type BackendName, type BackendPreference } from './backend-preference.ts';

/** What is known about the WebGPU adapter. */
export interface AdapterReport {
  /** Human-readable description (vendor, architecture, device), as the browser reports it. */
  description: string;
  vendor: string;
  architecture: string;
  /** True for software adapters such as SwiftShader: correct but slow. */
  isFallbackAdapter: boolean;
}

/** The outcome of {@link chooseBackend}. */
export interface BackendReport {
  /** The backend now active in tfjs. */
  backend: BackendName;
  requested: BackendPreference;
  /** wasm only: whether the multi-threaded build runs (needs cross-origin isolation). */
  threaded: boolean;
  /** wasm only: number of threads XNNPACK uses (1 when single-threaded); 0 for other backends. */
  threads: number;
  /** The WebGPU adapter that was probed, or null when there is none. */
  adapter: AdapterReport | null;
  /** Why this backend, in plain words. */
  reason: string;
  /** Backends that were tried first and failed, with the error. */
  failures: string[];
}

/** The parts of `navigator.gpu` this module uses (structural, so tests can pass a fake). */
export interface GpuLike {
  requestAdapter(options?: { powerPreference?: 'low-power' | 'high-performance' }): Promise<GpuAdapterLike | null>;
}

interface AdapterInfoLike {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  isFallbackAdapter?: boolean;
}

/** The parts of a `GPUAdapter` this module reads. */
export interface GpuAdapterLike {
  readonly isFallbackAdapter?: boolean;
  readonly info?: AdapterInfoLike;
  requestAdapterInfo?(): Promise<AdapterInfoLike>;
}

/** wasm binary locations: a folder prefix or one URL per binary (see `setWasmPaths`). */
export type WasmPaths =
  | string
  | {
      'tfjs-backend-wasm.wasm': string;
      'tfjs-backend-wasm-simd.wasm': string;
      'tfjs-backend-wasm-threaded-simd.wasm': string;
    };

/** Options of {@link chooseBackend}. */
export interface ChooseBackendOptions {
  /** Which backend to use; `auto` (default) applies the rule in the module comment. */
  prefer?: BackendPreference;
  /** Where the wasm binaries are served (the page passes Vite `?url` imports; Node needs none). */
  wasmPaths?: WasmPaths;
  /** The WebGPU entry point; defaults to `navigator.gpu`. `null` means "no WebGPU". */
  gpu?: GpuLike | null;
  /** Defaults to `globalThis.crossOriginIsolated`. */
  crossOriginIsolated?: boolean;
}



function defaultGpu(): GpuLike | null {
  const nav = (globalThis as { navigator?: { gpu?: GpuLike } }).navigator;
  return nav?.gpu ?? null;
}

/** Requests an adapter and describes it; null when WebGPU is absent or yields no adapter. */
export async function probeAdapter(gpu: GpuLike | null = defaultGpu()): Promise<AdapterReport | null> {
  if (!gpu) return null;
  let adapter: GpuAdapterLike | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch {
    return null;
  }
  if (!adapter) return null;
  let info: AdapterInfoLike = adapter.info ?? {};
  if (!adapter.info && typeof adapter.requestAdapterInfo === 'function') {
    info = await adapter.requestAdapterInfo().catch(() => ({}));
  }
  const vendor = info.vendor ?? '';
  const architecture = info.architecture ?? '';
  const description = info.description || [vendor, architecture, info.device].filter((s) => s).join(' ') || 'unknown adapter';
  const isFallbackAdapter = adapter.isFallbackAdapter === true || info.isFallbackAdapter === true;
  return { description, vendor, architecture, isFallbackAdapter };
}

/**
 * The order in which backends are tried, and why (pure: no tfjs, no browser).
 * `auto`: WebGPU on a hardware adapter, else wasm, else cpu. A named backend comes first,
 * followed by the `auto` fallbacks; WebGPU named without any adapter is skipped.
 */
export function planBackends(prefer: BackendPreference, adapter: AdapterReport | null): { order: BackendName[]; reason: string } {
  const hardware = adapter !== null && !adapter.isFallbackAdapter;
  if (prefer === 'auto') {
    if (hardware) return { order: ['webgpu', 'wasm', 'cpu'], reason: `auto: hardware WebGPU adapter (${adapter.description})` };
    if (adapter) {
      return { order: ['wasm', 'cpu'], reason: `auto: WebGPU adapter "${adapter.description}" is a fallback (software) adapter, so wasm` };
    }
    return { order: ['wasm', 'cpu'], reason: 'auto: no WebGPU adapter, so wasm' };
  }
  if (prefer === 'webgpu') {
    if (!adapter) return { order: ['wasm', 'cpu'], reason: 'webgpu requested but there is no WebGPU adapter, so wasm' };
    const kind = adapter.isFallbackAdapter ? 'fallback (software) adapter' : 'hardware adapter';
    return { order: ['webgpu', 'wasm', 'cpu'], reason: `webgpu requested: ${kind} ${adapter.description}` };
  }
  if (prefer === 'wasm') return { order: ['wasm', 'cpu'], reason: 'wasm requested' };
  return { order: ['cpu'], reason: 'cpu requested' };
}

let wasmModule: typeof import('@tensorflow/tfjs-backend-wasm') | null = null;

async function activate(name: BackendName, options: ChooseBackendOptions): Promise<{ threads: number }> {
  if (name === 'webgpu') {
    await import('@tensorflow/tfjs-backend-webgpu');
    if (!tf.findBackendFactory('webgpu')) throw new BackendError('tfjs-backend-webgpu did not register (WebGPU unsupported here)');
  } else if (name === 'wasm') {
    if (!wasmModule) wasmModule = await import('@tensorflow/tfjs-backend-wasm');
    const initialised = tf.engine().registry['wasm'] !== undefined;
    if (options.wasmPaths !== undefined && !initialised) wasmModule.setWasmPaths(options.wasmPaths);
  }
  const ok = await tf.setBackend(name);
  if (!ok || tf.getBackend() !== name) throw new BackendError(`tf.setBackend(${JSON.stringify(name)}) failed`);
  await tf.ready();
  if (name === 'wasm') installRowCopyGather();
  return { threads: name === 'wasm' && wasmModule ? wasmModule.getThreadsCount() : 0 };
}

/**
 * Picks and initialises the tfjs backend (see the module comment for the rule), falling back
 * along the plan when one fails to start. Throws {@link BackendError} when none starts.
 */
export async function chooseBackend(options: ChooseBackendOptions = {}): Promise<BackendReport> {
  const requested = parseBackendPreference(options.prefer ?? 'auto');
  const gpu = options.gpu !== undefined ? options.gpu : defaultGpu();
  const adapter = requested === 'wasm' || requested === 'cpu' ? null : await probeAdapter(gpu);
  const isolated = options.crossOriginIsolated ?? (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
  const plan = planBackends(requested, adapter);
  const failures: string[] = [];
  for (const name of plan.order) {
    try {
      const { threads } = await activate(name, options);
      const reason = failures.length === 0 ? plan.reason : `${plan.reason}; fell back to ${name}`;
      return { backend: name, requested, threaded: name === 'wasm' && threads > 1 && isolated, threads, adapter, reason, failures };
    } catch (e) {
      failures.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  throw new BackendError(`No tfjs backend could be initialised (${failures.join('; ')})`);
}

/** The minimal `GPUDevice` surface used for loss detection and simulation. */
export interface GpuDeviceLike {
  readonly lost: Promise<{ reason?: string; message?: string }>;
  destroy(): void;
}

/** The active WebGPU backend's device, or null when the active backend is not WebGPU. */
export function currentGpuDevice(): GpuDeviceLike | null {
  if (tf.getBackend() !== 'webgpu') return null;
  const backend = tf.backend() as unknown as { device?: GpuDeviceLike };
  return backend.device ?? null;
}

/**
 * Calls `onLost` once when the active WebGPU device is lost (driver reset, `device.destroy()`).
 * Returns false when the active backend is not WebGPU.
 */
export function watchDeviceLoss(onLost: (info: { reason: string; message: string }) => void): boolean {
  const device = currentGpuDevice();
  if (!device) return false;
  void device.lost.then((info) => onLost({ reason: info?.reason ?? 'unknown', message: info?.message ?? '' }));
  return true;
}

/**
 * Forgets the (dead) WebGPU backend instance so that the next `setBackend('webgpu')` builds a
 * fresh device; the registered factory is kept. Tensors that lived on it are lost: dispose them
 * first, then reload weights from a checkpoint.
 */
export function resetWebgpuBackend(): void {
  const factory = tf.findBackendFactory('webgpu');
  if (!factory) return;
  try {
    tf.removeBackend('webgpu');
  } catch {
    // Disposing the buffers of a destroyed device may throw before the entry is removed.
    const engine = tf.engine() as unknown as { registry: Record<string, unknown>; registryFactory: Record<string, unknown> };
    delete engine.registry['webgpu'];
    delete engine.registryFactory['webgpu'];
  }
  tf.registerBackend('webgpu', factory, 3);
}
