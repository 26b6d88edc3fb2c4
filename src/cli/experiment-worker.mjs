// Entry of an experiment worker thread: TypeScript through tsx (as bin.mjs), then the worker itself.
import { register } from 'tsx/esm/api';

register();
await import('./experiment-worker.ts');
