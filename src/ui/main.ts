/**
 * Page entry: mounts the app into `#app` of index.html.
 */
import './style.css';
import { ENVIRONMENTS } from '../envs/registry.ts';
import { mountPlayPanel, type PlayPanelHandle } from './play.ts';
import { mountTrainerPanel, type TrainerPanelHandle } from './trainer-panel.ts';

/** Mounts the app into `root`: the play panel over every built-in environment, and the trainer panel. */
export function mountApp(root: HTMLElement): { play: PlayPanelHandle; trainer: TrainerPanelHandle } {
  const play = mountPlayPanel(root, { environments: Object.values(ENVIRONMENTS) });
  const trainer = mountTrainerPanel(root);
  return { play, trainer };
}

const root = document.getElementById('app');
if (root) mountApp(root);
