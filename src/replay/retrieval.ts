/**
 * The in-memory retrieval index: exact top-k cosine similarity over a run's transition
 * embeddings.
 *
 * Vectors are L2-normalised when added, so cosine similarity is a dot product. They live in one
 * float32 matrix (row-major, rows padded to a multiple of 16 with zeros, grown by doubling) with
 * parallel arrays of transition seqs, source codes and task codes for filtering. Rows stay
 * sorted by seq; removals leave tombstones that are compacted away once they make up a quarter
 * of the rows.
 *
 * A search scans the matrix in cache-sized blocks of rows: for each block, every query of a
 * batch gets its dot products from the WebAssembly SIMD kernel (`kernel.ts`: float32 products,
 * float64 accumulation; a JavaScript loop where WebAssembly SIMD is missing), then a small heap per
 * query keeps the best k that pass the filter. Ties in score go to the smaller seq (the older
 * transition), so results are deterministic and equal a brute-force ranking.
 */
import type { TrajectorySource } from '../core/types.ts';
import { createScanKernel, type ScanKernel } from './kernel.ts';
import { SOURCES } from './schema.ts';

/** One hit: the transition's seq in its run and its cosine similarity to the query. */
export interface SearchHit {
  seq: number;
  score: number;
}

/** Restricts a search to some sources and/or tasks (both when both are given). */
export interface SearchFilter {
  sources?: readonly TrajectorySource[];
  taskIds?: readonly string[];
}

/** A row to add. `vector` need not be normalised; it is copied. */
export interface IndexRow {
  seq: number;
  source: TrajectorySource;
  taskId: string;
  vector: Float32Array;
}

/** Options of `RetrievalIndex`. */
export interface RetrievalIndexOptions {
  /** Rows to allocate up front (default 1,024; the matrix doubles when full). */
  initialRows?: number;
  /** The scan kernel: WebAssembly SIMD when available (`auto`, the default), or always JavaScript. */
  kernel?: 'auto' | 'js';
}

const DELETED = 255;
const INITIAL_ROWS = 1024;
/** Bytes of matrix per scan block: small enough to stay in L2 while every query of a batch passes over it. */
const BLOCK_BYTES = 256 * 1024;
/** Queries the WebAssembly memory holds at once (larger batches are processed in chunks). */
const QUERY_SLOTS = 32;
const PAGE = 65536;
const MAX_PAGES = 65536;

const SOURCE_CODES: ReadonlyMap<TrajectorySource, number> = new Map(SOURCES.map((s, i) => [s, i]));

/** Writes `v / |v|` into `out` at `offset`; a zero vector stays zero. Returns the norm. */
function normaliseInto(v: ArrayLike<number>, out: Float32Array | Float64Array, offset: number): number {
  let sq = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i] as number;
    sq += x * x;
  }
  const norm = Math.sqrt(sq);
  if (!Number.isFinite(norm)) throw new RangeError('vector has a NaN or infinite component');
  const scale = norm > 0 ? 1 / norm : 0;
  for (let i = 0; i < v.length; i++) out[offset + i] = (v[i] as number) * scale;
  return norm;
}

/** The JavaScript fallback of the kernel's `dots`: row dot products into `out[0..rows)`. */
function dotsJs(m: Float32Array, first: number, rows: number, stride: number, q: Float32Array, qOffset: number, out: Float64Array): void {
  for (let r = 0; r < rows; r++) out[r] = dotJs(m, (first + r) * stride, q, qOffset, stride);
}

function dotJs(m: Float32Array, o: number, q: Float32Array, qo: number, n: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  for (let j = 0; j < n; j += 4, o += 4, qo += 4) {
    s0 += (m[o] as number) * (q[qo] as number);
    s1 += (m[o + 1] as number) * (q[qo + 1] as number);
    s2 += (m[o + 2] as number) * (q[qo + 2] as number);
    s3 += (m[o + 3] as number) * (q[qo + 3] as number);
  }
  return s0 + s1 + (s2 + s3);
}

/** Exact top-k cosine search over one run's embeddings. */
export class RetrievalIndex {
  /** Length of every vector. */
  readonly dim: number;
  /** Floats per stored row (dim rounded up to a multiple of 16, the kernel's step). */
  private readonly stride: number;
  private readonly blockRows: number;
  private readonly kernel: ScanKernel | null;
  /** Byte offsets in the kernel's memory (0 in JavaScript mode). */
  private readonly queryOffset: number;
  private readonly outOffset: number;
  private readonly matrixOffset: number;
  private matrix: Float32Array;
  private queries: Float32Array;
  private out: Float64Array;
  private seqs: Float64Array;
  private sourceCodes: Uint8Array;
  private taskCodes: Uint32Array;
  private readonly taskIds: string[] = [];
  private readonly taskCodeOf = new Map<string, number>();
  private rows = 0;
  private deleted = 0;

  constructor(dim: number, options: RetrievalIndexOptions = {}) {
    if (!(Number.isInteger(dim) && dim > 0)) throw new RangeError(`RetrievalIndex dim must be a positive integer, got ${dim}`);
    const initialRows = options.initialRows ?? INITIAL_ROWS;
    if (!(Number.isInteger(initialRows) && initialRows > 0)) throw new RangeError(`initialRows must be a positive integer, got ${initialRows}`);
    const kernelMode = options.kernel ?? 'auto';
    if (kernelMode !== 'auto' && kernelMode !== 'js') throw new RangeError(`kernel must be "auto" or "js", got ${JSON.stringify(kernelMode)}`);
    this.dim = dim;
    this.stride = Math.ceil(dim / 16) * 16;
    this.blockRows = Math.max(16, Math.floor(BLOCK_BYTES / (this.stride * 4)));
    const queryBytes = QUERY_SLOTS * this.stride * 4;
    const outBytes = this.blockRows * 8;
    this.queryOffset = 0;
    this.outOffset = queryBytes;
    this.matrixOffset = Math.ceil((queryBytes + outBytes) / 64) * 64;
    let kernel: ScanKernel | null = null;
    if (kernelMode === 'auto' && typeof WebAssembly !== 'undefined') {
      const pages = Math.ceil((this.matrixOffset + initialRows * this.stride * 4) / PAGE);
      if (pages <= MAX_PAGES) kernel = createScanKernel(new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES }));
    }
    this.kernel = kernel;
    if (kernel) {
      this.matrix = new Float32Array(0);
      this.queries = new Float32Array(0);
      this.out = new Float64Array(0);
      this.refreshViews(initialRows);
    } else {
      this.matrix = new Float32Array(initialRows * this.stride);
      this.queries = new Float32Array(QUERY_SLOTS * this.stride);
      this.out = new Float64Array(this.blockRows);
    }
    this.seqs = new Float64Array(initialRows);
    this.sourceCodes = new Uint8Array(initialRows);
    this.taskCodes = new Uint32Array(initialRows);
  }

  /** Which scan kernel runs: `wasm-simd` or `js`. */
  get kernelName(): 'wasm-simd' | 'js' {
    return this.kernel ? 'wasm-simd' : 'js';
  }

  private refreshViews(capacity: number): void {
    const buffer = (this.kernel as ScanKernel).memory.buffer;
    this.matrix = new Float32Array(buffer, this.matrixOffset, capacity * this.stride);
    this.queries = new Float32Array(buffer, this.queryOffset, QUERY_SLOTS * this.stride);
    this.out = new Float64Array(buffer, this.outOffset, this.blockRows);
  }

  /** Number of live (not removed) vectors. */
  get size(): number {
    return this.rows - this.deleted;
  }

  /** Rows allocated (live, tombstoned and free). */
  get capacity(): number {
    return this.seqs.length;
  }

  /** Bytes a full scan reads from the matrix (rows including tombstones x padded dim x 4). */
  get scanBytes(): number {
    return this.rows * this.stride * 4;
  }

  /** The largest seq ever added and still present as a row (live or tombstone), or -1. */
  get lastSeq(): number {
    return this.rows === 0 ? -1 : (this.seqs[this.rows - 1] as number);
  }

  /** Makes room for at least `rows` rows in total without further growth. */
  reserve(rows: number): void {
    if (rows <= this.capacity) return;
    let cap = this.capacity;
    while (cap < rows) cap *= 2;
    if (this.kernel) {
      const needed = Math.ceil((this.matrixOffset + cap * this.stride * 4) / PAGE);
      const have = this.kernel.memory.buffer.byteLength / PAGE;
      if (needed > MAX_PAGES) throw new RangeError(`the retrieval index cannot hold ${cap} vectors of ${this.dim} dims (over 4 GiB)`);
      if (needed > have) this.kernel.memory.grow(needed - have); // keeps the contents; views must be renewed
      this.refreshViews(cap);
    } else {
      const matrix = new Float32Array(cap * this.stride);
      matrix.set(this.matrix.subarray(0, this.rows * this.stride));
      this.matrix = matrix;
    }
    const seqs = new Float64Array(cap);
    seqs.set(this.seqs.subarray(0, this.rows));
    const sourceCodes = new Uint8Array(cap);
    sourceCodes.set(this.sourceCodes.subarray(0, this.rows));
    const taskCodes = new Uint32Array(cap);
    taskCodes.set(this.taskCodes.subarray(0, this.rows));
    this.seqs = seqs;
    this.sourceCodes = sourceCodes;
    this.taskCodes = taskCodes;
  }

  /**
   * Appends a row. Seqs must increase (the store allocates them monotonically); adding a seq
   * not above `lastSeq` is ignored and returns false, which makes replaying a change idempotent.
   */
  add(row: IndexRow): boolean {
    const { seq, source, taskId, vector } = row;
    if (!Number.isFinite(seq)) throw new RangeError(`seq must be a finite number, got ${seq}`);
    if (vector.length !== this.dim) throw new RangeError(`vector has ${vector.length} components, the index holds ${this.dim}`);
    const code = SOURCE_CODES.get(source);
    if (code === undefined) throw new RangeError(`unknown source ${JSON.stringify(source)}`);
    if (seq <= this.lastSeq) return false;
    if (this.rows === this.capacity) this.reserve(this.rows + 1);
    const offset = this.rows * this.stride;
    normaliseInto(vector, this.matrix, offset);
    this.matrix.fill(0, offset + this.dim, offset + this.stride);
    let task = this.taskCodeOf.get(taskId);
    if (task === undefined) {
      task = this.taskIds.length;
      this.taskIds.push(taskId);
      this.taskCodeOf.set(taskId, task);
    }
    this.seqs[this.rows] = seq;
    this.sourceCodes[this.rows] = code;
    this.taskCodes[this.rows] = task;
    this.rows += 1;
    return true;
  }

  /** Row position of `seq`, or -1 (binary search: rows are sorted by seq). */
  private find(seq: number): number {
    let lo = 0;
    let hi = this.rows - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const s = this.seqs[mid] as number;
      if (s === seq) return mid;
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Whether a live row has this seq. */
  has(seq: number): boolean {
    const r = this.find(seq);
    return r >= 0 && this.sourceCodes[r] !== DELETED;
  }

  /**
   * Reads every stored component once: the memory-read baseline a scan is compared with in the
   * benchmark (SIMD loads in the WebAssembly kernel, a plain loop otherwise). Returns the sum so
   * the work cannot be optimised away.
   */
  readAll(): number {
    if (this.kernel) return this.kernel.sum(this.matrixOffset, this.rows * this.stride * 4);
    const m = this.matrix;
    const n = this.rows * this.stride;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    for (let i = 0; i < n; i += 4) {
      s0 += m[i] as number;
      s1 += m[i + 1] as number;
      s2 += m[i + 2] as number;
      s3 += m[i + 3] as number;
    }
    return s0 + s1 + (s2 + s3);
  }

  /** Removes the rows with seq in [from, to] (inclusive); returns how many live rows went. */
  removeRange(from: number, to: number): number {
    if (!(Number.isFinite(from) && Number.isFinite(to))) throw new RangeError(`removeRange needs finite bounds, got ${from}, ${to}`);
    let lo = 0;
    let hi = this.rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.seqs[mid] as number) < from) lo = mid + 1;
      else hi = mid;
    }
    let removed = 0;
    for (let r = lo; r < this.rows && (this.seqs[r] as number) <= to; r++) {
      if (this.sourceCodes[r] !== DELETED) {
        this.sourceCodes[r] = DELETED;
        removed++;
      }
    }
    this.deleted += removed;
    if (this.deleted > 0 && this.deleted * 4 >= this.rows) this.compact();
    return removed;
  }

  /** Drops tombstones, keeping seq order. */
  compact(): void {
    const d = this.stride;
    let w = 0;
    for (let r = 0; r < this.rows; r++) {
      if (this.sourceCodes[r] === DELETED) continue;
      if (w !== r) {
        this.matrix.copyWithin(w * d, r * d, (r + 1) * d);
        this.seqs[w] = this.seqs[r] as number;
        this.sourceCodes[w] = this.sourceCodes[r] as number;
        this.taskCodes[w] = this.taskCodes[r] as number;
      }
      w++;
    }
    this.rows = w;
    this.deleted = 0;
  }

  /**
   * The k most similar rows to each query (cosine similarity), best first; fewer when fewer
   * rows match the filter. Ties go to the smaller seq.
   */
  search(queries: readonly Float32Array[], k: number, filter: SearchFilter = {}): SearchHit[][] {
    if (!(Number.isInteger(k) && k > 0)) throw new RangeError(`k must be a positive integer, got ${k}`);
    queries.forEach((q, i) => {
      if (q.length !== this.dim) throw new RangeError(`query ${i} has ${q.length} components, the index holds ${this.dim}`);
    });
    const sourceMask = new Uint8Array(256);
    for (const s of filter.sources ?? SOURCES) {
      const code = SOURCE_CODES.get(s);
      if (code === undefined) throw new RangeError(`unknown source ${JSON.stringify(s)} in filter`);
      sourceMask[code] = 1;
    }
    let taskMask: Uint8Array | null = null;
    if (filter.taskIds) {
      taskMask = new Uint8Array(this.taskIds.length);
      for (const id of filter.taskIds) {
        const code = this.taskCodeOf.get(id);
        if (code !== undefined) taskMask[code] = 1;
      }
    }
    const results: SearchHit[][] = [];
    for (let first = 0; first < queries.length; first += QUERY_SLOTS) {
      results.push(...this.searchChunk(queries.slice(first, first + QUERY_SLOTS), k, sourceMask, taskMask, first));
    }
    return results;
  }

  private searchChunk(queries: readonly Float32Array[], k: number, sourceMask: Uint8Array, taskMask: Uint8Array | null, firstIndex: number): SearchHit[][] {
    const stride = this.stride;
    const nq = queries.length;
    const qv = this.queries;
    queries.forEach((q, i) => {
      const offset = i * stride;
      if (normaliseInto(q, qv, offset) === 0) throw new RangeError(`query ${firstIndex + i} is the zero vector (cosine similarity is undefined)`);
      qv.fill(0, offset + this.dim, offset + stride);
    });
    const heapScore = queries.map(() => new Float64Array(k));
    const heapSeq = queries.map(() => new Float64Array(k));
    const heapSize = new Int32Array(nq);
    const seqs = this.seqs;
    const codes = this.sourceCodes;
    const tasks = this.taskCodes;
    const out = this.out;
    const kernel = this.kernel;

    for (let start = 0; start < this.rows; start += this.blockRows) {
      const count = Math.min(this.rows, start + this.blockRows) - start;
      for (let qi = 0; qi < nq; qi++) {
        if (kernel) kernel.dots(this.matrixOffset + start * stride * 4, this.queryOffset + qi * stride * 4, count, stride, this.outOffset);
        else dotsJs(this.matrix, start, count, stride, qv, qi * stride, out);
        const hs = heapScore[qi] as Float64Array;
        const hq = heapSeq[qi] as Float64Array;
        let size = heapSize[qi] as number;
        for (let i = 0; i < count; i++) {
          const r = start + i;
          if (sourceMask[codes[r] as number] === 0) continue;
          if (taskMask !== null && taskMask[tasks[r] as number] === 0) continue;
          const score = out[i] as number;
          const seq = seqs[r] as number;
          if (size < k) {
            heapPush(hs, hq, size, score, seq);
            size++;
          } else if (score > (hs[0] as number) || (score === hs[0] && seq < (hq[0] as number))) {
            heapReplaceRoot(hs, hq, size, score, seq);
          }
        }
        heapSize[qi] = size;
      }
    }

    return queries.map((_, qi) => {
      const hs = heapScore[qi] as Float64Array;
      const hq = heapSeq[qi] as Float64Array;
      const hits: SearchHit[] = [];
      for (let i = 0; i < (heapSize[qi] as number); i++) hits.push({ seq: hq[i] as number, score: hs[i] as number });
      return hits.sort(compareHits);
    });
  }
}

/** Best first: higher score, then smaller seq. */
function compareHits(a: SearchHit, b: SearchHit): number {
  return b.score - a.score || a.seq - b.seq;
}

/** Whether (s1, q1) ranks below (s2, q2). The heap's root is its worst entry. */
function worse(s1: number, q1: number, s2: number, q2: number): boolean {
  return s1 < s2 || (s1 === s2 && q1 > q2);
}

function heapPush(hs: Float64Array, hq: Float64Array, size: number, score: number, seq: number): void {
  let i = size;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const ps = hs[parent] as number;
    const pq = hq[parent] as number;
    if (!worse(score, seq, ps, pq)) break;
    hs[i] = ps;
    hq[i] = pq;
    i = parent;
  }
  hs[i] = score;
  hq[i] = seq;
}

function heapReplaceRoot(hs: Float64Array, hq: Float64Array, size: number, score: number, seq: number): void {
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= size) break;
    const r = l + 1;
    let c = l;
    if (r < size && worse(hs[r] as number, hq[r] as number, hs[l] as number, hq[l] as number)) c = r;
    const cs = hs[c] as number;
    const cq = hq[c] as number;
    if (!worse(cs, cq, score, seq)) break;
    hs[i] = cs;
    hq[i] = cq;
    i = c;
  }
  hs[i] = score;
  hq[i] = seq;
}
