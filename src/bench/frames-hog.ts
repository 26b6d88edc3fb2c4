/**
 * A worker that keeps one CPU core busy until it is terminated: the load the frame benchmark
 * (src/bench/frames-page.ts) puts beside the training page.
 */
let sink = 0;
for (;;) {
  for (let i = 0; i < 1e7; i++) sink = (sink + i * 31) % 1_000_003;
  // Kept observable, so the loop is not optimised away.
  if (sink === -1) postMessage(sink);
}
