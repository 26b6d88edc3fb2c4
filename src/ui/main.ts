/**
 * Page entry: mounts the app into `#app` of index.html.
 */
import './style.css';
import { ENVIRONMENTS } from '../envs/registry.ts';
import { mountPlayPanel, type PlayPanelHandle } from './play.ts';

/** Mounts the app (for now: the play panel over every built-in environment) into `root`. */
export function mountApp(root: HTMLElement): PlayPanelHandle {
  return mountPlayPanel(root, { environments: Object.values(ENVIRONMENTS) });
}

const root = document.getElementById('app');
if (root) mountApp(root);
