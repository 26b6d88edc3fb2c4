// comlink ships the node adapter's types as node-adapter.d.ts beside node-adapter.mjs; this names them for the .mjs path.
declare module 'comlink/dist/esm/node-adapter.mjs' {
  export { default } from 'comlink/dist/esm/node-adapter';
}
