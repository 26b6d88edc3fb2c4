/**
 * Page entry: mounts the app into `#app` of index.html.
 */
import './strict-csp.ts';
import './style.css';
import { ENVIRONMENTS } from '../envs/registry.ts';
import { backendFromUrl } from '../policy/backend-preference.ts';
import { mountPlayPanel, type PlayPanelHandle } from './play.ts';
import { mountTrainerPanel, type TrainerPanelHandle } from './trainer-panel.ts';
import { mountTrainingPage, type TrainingPageHandle } from './TrainingPage.tsx';

/**
 * Mounts the app into `root`: the training page (setup, training, watch, results), the play
 * panel over every built-in environment, and the trainer panel.
 */
export function mountApp(root: HTMLElement): { training: TrainingPageHandle; play: PlayPanelHandle; trainer: TrainerPanelHandle } {
  let backend;
  try {
    backend = backendFromUrl(globalThis.location?.href ?? 'http://localhost/');
  } catch {
    // The trainer panel reports a bad ?backend=; training uses auto then.
    backend = undefined;
  }
  const training = mountTrainingPage(root, backend ? { backend } : {});
  const play = mountPlayPanel(root, { environments: Object.values(ENVIRONMENTS) });
  const trainer = mountTrainerPanel(root);
  return { training, play, trainer };
}

const root = document.getElementById('app');
if (root) mountApp(root);
