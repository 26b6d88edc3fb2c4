/**
 * The whole app as src/ui/main.ts mounts it (training page, play panel, trainer panel), in
 * Chromium at a desktop size after a tiny run: axe-core finds no violation and leaves nothing for
 * manual review, and the controls appear on screen in the order that Tab visits them.
 */
import axe from 'axe-core';
import { afterEach, describe, expect, it } from 'vitest';
import { page, userEvent } from 'vitest/browser';
import '../src/ui/style.css';
import { mountApp } from '../src/ui/main.ts';
import { setUpTinyRun } from './fixtures/training-page.ts';

let cleanup: (() => void) | null = null;
afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe('the app (browser)', () => {
  it('after a run: no axe violation or item left for manual review, and on-screen order follows tab order', async () => {
    await page.viewport(1280, 800);
    const root = document.createElement('main');
    root.className = 'app';
    document.body.appendChild(root);
    const app = mountApp(root);
    cleanup = () => {
      app.training.destroy();
      app.play.destroy();
      app.trainer.destroy();
      root.remove();
    };
    await app.training.ready;
    const byTestId = <T extends HTMLElement = HTMLElement>(id: string): T => root.querySelector<T>(`[data-testid="${id}"]`) as T;
    await setUpTinyRun(byTestId, 2);
    await userEvent.click(byTestId('train-start'));
    await expect.poll(() => byTestId('train-status').dataset['state'], { timeout: 60_000, interval: 100 }).toBe('done');

    // Each form control sits below its panel's heading, as it comes after it in tab order.
    const top = (node: Element): number => node.getBoundingClientRect().top;
    const below = (heading: string, controls: string[]) => {
      for (const id of controls) expect(top(byTestId(id)), id).toBeGreaterThan(top(root.querySelector(`#${heading}`) as Element));
    };
    below('setup-heading', ['setup-env', 'setup-backend', 'train-start']);
    below('train-heading', ['train-run', 'train-pause']);
    expect(top(byTestId('setup-backend'))).toBeGreaterThan(top(byTestId('setup-env')));

    // The inspector has loaded the run's buffer and curriculum.
    for (const table of ['buffer-table', 'curriculum-table']) await expect.poll(() => byTestId(table).querySelectorAll('tbody tr').length, { timeout: 10_000 }).toBeGreaterThan(0);
    const result = await axe.run(root);
    const list = (items: axe.Result[]) => items.map((i) => `${i.id}: ${i.nodes.map((n) => `${n.target.join(' ')} (${[...n.any, ...n.all, ...n.none].map((c) => c.message).join('; ')})`).join(', ')}`);
    expect(list(result.violations)).toEqual([]);
    expect(list(result.incomplete)).toEqual([]);
  }, 120_000);
});
