/**
 * Yielding the page's main thread between pieces of work, so that a frame can be painted and
 * input handled in between (the page's target: no frame gap over 50 ms).
 */

/** Resolves in a new task: `scheduler.yield()` where the browser has it, else `setTimeout(0)`. */
export function yieldToMain(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler;
  if (typeof scheduler?.yield === 'function') return scheduler.yield();
  return new Promise((resolve) => setTimeout(resolve, 0));
}
