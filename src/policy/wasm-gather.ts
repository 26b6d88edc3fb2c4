/**
 * A row-copy `GatherV2` for the tfjs wasm backend.
 *
 * The policy head packs candidates without padding, so every forward pass gathers rows: each
 * decision's state row once per candidate, each distinct lead row once per candidate. tfjs-wasm
 * 4.22's gather computes coordinates element by element, an order of magnitude slower than
 * copying whole rows with `TypedArray.set`. The override below handles the head's case (gather
 * along axis 0, no batch dimensions, int32 indices, a numeric tensor) by copying rows inside the
 * wasm heap, and hands every other call to the original kernel. Its output is the original's bit
 * for bit (a copy either way). BENCHMARKS.md ("Training speed") measures both side by side.
 */
import * as tf from '@tensorflow/tfjs';

/** The slice of `BackendWasm` the override uses (public methods of its class in tfjs-backend-wasm 4.22). */
interface WasmHeapBackend {
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  typedArrayFromHeap(info: tf.TensorInfo): Float32Array | Int32Array | Uint8Array;
  disposeData(dataId: tf.TensorInfo['dataId'], force?: boolean): boolean;
}

const KERNEL = 'GatherV2';
const BACKEND = 'wasm';
/** Rows shorter than this are copied element by element (a `subarray` per row costs more). */
const SHORT_ROW = 16;

type KernelFn = tf.KernelConfig['kernelFunc'];

/** The wasm backend's own `GatherV2` while the override is installed. */
let originalConfig: tf.KernelConfig | null = null;

function isHeapBackend(backend: unknown): backend is WasmHeapBackend {
  const b = backend as Partial<WasmHeapBackend> | null;
  return b !== null && typeof b === 'object' && typeof b.makeOutput === 'function' && typeof b.typedArrayFromHeap === 'function' && typeof b.disposeData === 'function';
}

/**
 * The override's kernel function: rows of `x` along axis 0 copied in the heap, or `original`
 * for any other case (another axis, batch dimensions, strings, non-int32 indices, a backend
 * without heap access). An index outside [0, rows) throws, as the original does, and frees the
 * output it had allocated.
 */
export function rowCopyGather(original: KernelFn): KernelFn {
  const kernel: KernelFn = (args) => {
    const { inputs, attrs, backend } = args;
    const x = inputs['x'] as tf.TensorInfo | undefined;
    const indices = inputs['indices'] as tf.TensorInfo | undefined;
    const axis = (attrs?.['axis'] as number | undefined) ?? 0;
    const batchDims = (attrs?.['batchDims'] as number | undefined) ?? 0;
    if (!x || !indices || x.shape.length === 0 || !isHeapBackend(backend)) return original(args);
    const normalizedAxis = axis < 0 ? axis + x.shape.length : axis;
    if (normalizedAxis !== 0 || batchDims !== 0 || indices.dtype !== 'int32' || x.dtype === 'string' || x.dtype === 'complex64') return original(args);
    const rows = x.shape[0] as number;
    const tail = x.shape.slice(1);
    const rowSize = tail.reduce((a, b) => a * b, 1);
    const out = backend.makeOutput([...indices.shape, ...tail], x.dtype);
    // Views taken after the allocation: growing the heap replaces its buffer.
    const src = backend.typedArrayFromHeap(x);
    const ids = backend.typedArrayFromHeap(indices);
    const dst = backend.typedArrayFromHeap(out);
    for (let i = 0; i < ids.length; i++) {
      const r = ids[i] as number;
      if (!(r >= 0 && r < rows)) {
        backend.disposeData(out.dataId, true);
        throw new RangeError(`GatherV2: the index value ${r} is not in [0, ${rows - 1}]`);
      }
      const from = r * rowSize;
      const to = i * rowSize;
      if (rowSize < SHORT_ROW) for (let k = 0; k < rowSize; k++) dst[to + k] = src[from + k] as number;
      else dst.set(src.subarray(from, from + rowSize), to);
    }
    return out;
  };
  return kernel;
}

/**
 * Installs {@link rowCopyGather} as the wasm backend's `GatherV2` (once; later calls do
 * nothing). Returns false when tfjs has no wasm `GatherV2` registered (the wasm backend module
 * was not imported).
 */
export function installRowCopyGather(): boolean {
  if (originalConfig) return true;
  const config = tf.getKernel(KERNEL, BACKEND);
  if (!config) return false;
  tf.unregisterKernel(KERNEL, BACKEND);
  tf.registerKernel({ ...config, kernelFunc: rowCopyGather(config.kernelFunc) });
  originalConfig = config;
  return true;
}

/** Puts the wasm backend's own `GatherV2` back (benchmarks compare the two); false when the override was not installed. */
export function uninstallRowCopyGather(): boolean {
  if (!originalConfig) return false;
  tf.unregisterKernel(KERNEL, BACKEND);
  tf.registerKernel(originalConfig);
  originalConfig = null;
  return true;
}
