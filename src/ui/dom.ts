/**
 * Tiny DOM helpers for the page. Text is only ever inserted as text nodes: nothing here
 * parses HTML, so environment output, task instructions and typed input cannot inject markup.
 */

/** Attributes accepted by {@link el}: plain string attributes (`data-*`, `aria-*`, `class`, ...). */
export type Attrs = Readonly<Record<string, string | number | boolean | undefined>>;

/** A child for {@link el}: a node, or a string that becomes a text node. */
export type Child = Node | string | null | undefined | false;

/**
 * Creates an element with string attributes and children. Strings become text nodes (never HTML).
 * A `true` attribute is set as an empty boolean attribute; `false` and `undefined` are skipped.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  children: readonly Child[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

/** Appends children to `parent`; strings become text nodes. */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** Replaces all children of `parent` (strings become text nodes). */
export function replaceChildren(parent: Element, children: readonly Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** Sets an element's text, as text. */
export function setText(node: Element, text: string): void {
  node.textContent = text;
}

let idCounter = 0;

/** A document-unique id with a readable prefix, for label/input pairs. */
export function uniqueId(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/** Formats a reward for display: integers as-is, others with up to 3 decimals. */
export function formatReward(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return String(Math.round(value * 1000) / 1000);
}
