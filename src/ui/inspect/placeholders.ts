/**
 * The retrieval experience model's reasoning names kinds of action by their signature, with each
 * entity marked by a placeholder (`search[qi]`, `click[qid]`, `go to qx`; see
 * src/experience/retrieval/evidence.ts). The inspector shows those placeholders as words.
 */

/** What each placeholder stands for. */
export const PLACEHOLDER_WORDS: Readonly<Record<string, string>> = {
  qi: 'words of the instruction',
  qid: 'an id',
  qx: 'a thing the instruction does not name',
  qn: 'a number',
  '{}': 'something',
};

const PLACEHOLDER = /\{\}|\b(?:qid|qi|qx|qn)\b/g;

/** `text` with the placeholders inside its double-quoted action kinds replaced by words. */
export function readablePlaceholders(text: string): string {
  // Only inside quotes: elsewhere the text is the environment's or the agent's, to be shown as it is.
  return text.replace(/"[^"\n]*"/g, (quoted) => quoted.replace(PLACEHOLDER, (p) => PLACEHOLDER_WORDS[p] ?? p));
}
