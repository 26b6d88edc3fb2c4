/**
 * The LLM worker: WebLLM's engine (chat model and embedding model) behind WebLLM's worker
 * protocol, with a logit processor registry for the policy prior and a typed side channel.
 * Create it through `createLLMClient` (src/llm/client.ts).
 */
import { hostLLMWorker } from '../src/llm/worker-host.ts';

hostLLMWorker(self);
