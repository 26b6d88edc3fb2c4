/**
 * Imported first by the page and by each worker: keeps libraries from probing for eval, which
 * the page's Content-Security-Policy refuses (vite.config.ts). zod otherwise tries
 * `new Function('')` once to decide whether to compile its parsers; the refusal is caught, but
 * the browser still reports it as a CSP violation.
 */
import { z } from 'zod';

z.config({ jitless: true });
