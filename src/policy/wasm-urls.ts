/**
 * URLs of the tfjs wasm binaries as served by Vite (`?url` imports), for `setWasmPaths` in the
 * page and in workers, so that the binaries come from this origin and no CDN is ever contacted.
 * Browser-only: Node resolves the binaries from the package itself and must not import this.
 */
import plainUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url';
import simdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url';
import threadedSimdUrl from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url';
import type { WasmPaths } from './backend.ts';

/** The three tfjs wasm binaries, served by Vite. */
export const TFJS_WASM_PATHS: WasmPaths = {
  'tfjs-backend-wasm.wasm': plainUrl,
  'tfjs-backend-wasm-simd.wasm': simdUrl,
  'tfjs-backend-wasm-threaded-simd.wasm': threadedSimdUrl,
};
