/**
 * Backend names and preferences, without tfjs: the page reads `?backend=` with this before it
 * starts the trainer worker, so the main bundle does not pull in TensorFlow.js.
 */

/** The backends the policy can train on. */
export const BACKEND_NAMES = ['webgpu', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];
/** A backend by name, or `auto`: WebGPU on a real (non-fallback) adapter, else wasm, else cpu. */
export type BackendPreference = BackendName | 'auto';

/** Thrown when no backend at all could be initialised, or for a bad preference. */
export class BackendError extends Error {
  override name = 'BackendError';
}

/** Checks a backend preference, throwing a {@link BackendError} that names the bad value. */
export function parseBackendPreference(value: string): BackendPreference {
  if (value === 'auto' || (BACKEND_NAMES as readonly string[]).includes(value)) return value as BackendPreference;
  throw new BackendError(`Unknown backend ${JSON.stringify(value)}: use one of auto, ${BACKEND_NAMES.join(', ')}`);
}

/**
 * The backend asked for by a page URL's `backend` query parameter (`?backend=webgpu|wasm|cpu|auto`),
 * or undefined when absent. Throws {@link BackendError} for an unknown value.
 */
export function backendFromUrl(url: string | URL, param = 'backend'): BackendPreference | undefined {
  const parsed = typeof url === 'string' ? new URL(url, 'http://localhost/') : url;
  const value = parsed.searchParams.get(param);
  return value === null || value === '' ? undefined : parseBackendPreference(value);
}
