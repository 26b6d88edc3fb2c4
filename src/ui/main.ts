/**
 * Page entry: mounts the app into `#app` of index.html.
 */
import '../core/strict-csp.ts';
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

// The app-shell service worker, which only a build has (src/sw/build-plugin.ts defines its name).
const serviceWorker = import.meta.env['APP_SHELL_SERVICE_WORKER'] as string | undefined;
if (serviceWorker && 'serviceWorker' in navigator) {
  navigator.serviceWorker.register(new URL(serviceWorker, document.baseURI), { scope: './' }).catch((e: unknown) => {
    // The page works without it; it just will not load offline.
    console.warn(`no offline support: ${e instanceof Error ? e.message : String(e)}`);
  });
}
