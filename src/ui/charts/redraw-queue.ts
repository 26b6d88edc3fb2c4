/**
 * Spreads chart redraws over separate tasks. When an iteration ends, every chart gets a point; ten
 * uPlot redraws in one task (plus the page's re-render) made the longest main-thread frame gap of
 * a quick run 80-120 ms. Here each redraw runs in its own task, only while its chart is on screen
 * (a chart scrolled away is redrawn, with its latest data only, when it comes back into view), so
 * the browser can paint between them.
 */
import { yieldToMain } from '../yield.ts';

/** A redraw waiting for its turn: `key` is its chart, so a newer one replaces an older one. */
interface Pending {
  run: () => void;
  visible: () => boolean;
}

/** A queue of chart redraws, run one per task (see the module comment). */
export class RedrawQueue {
  private readonly pending = new Map<object, Pending>();
  private pumping = false;

  /** Redraws waiting (visible or not). */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Schedules `run` for chart `key`, replacing one it still has waiting. It runs once `visible()`
   * is true; call {@link RedrawQueue.wake} when that may have changed.
   */
  schedule(key: object, run: () => void, visible: () => boolean = () => true): void {
    this.pending.delete(key);
    this.pending.set(key, { run, visible });
    this.wake();
  }

  /** Drops what `key` had waiting (its chart went away). */
  cancel(key: object): void {
    this.pending.delete(key);
  }

  /** Runs the visible redraws that wait, one per task. */
  wake(): void {
    if (this.pumping) return;
    this.pumping = true;
    void this.pump();
  }

  private async pump(): Promise<void> {
    try {
      for (;;) {
        await yieldToMain();
        const entry = [...this.pending].find(([, p]) => p.visible());
        if (!entry) return;
        const [key, pending] = entry;
        this.pending.delete(key);
        try {
          pending.run();
        } catch (err) {
          // One broken chart must not stop the others from updating.
          console.error('dreamgym: a chart redraw failed', err);
        }
      }
    } finally {
      this.pumping = false;
    }
  }
}

/** The page's queue, shared by its charts. */
export const chartRedraws = new RedrawQueue();
