// Arithmetic shared by the embedded partition's search paths: a float32 dot
// product, per-vector int8 quantization with its error bound, a vector
// checksum (to tell whether a saved graph still holds a record's vector), and
// a small top-k.

export function dot(rows: Float32Array, offset: number, query: Float32Array, d: number): number {
  let s0 = 0;
  let s1 = 0;
  let j = 0;
  for (; j + 1 < d; j += 2) {
    s0 += (rows[offset + j] as number) * (query[j] as number);
    s1 += (rows[offset + j + 1] as number) * (query[j + 1] as number);
  }
  if (j < d) s0 += (rows[offset + j] as number) * (query[j] as number);
  return s0 + s1;
}

/**
 * Writes round(x / max|x| · 127) into `out` and returns ‖x − x̃‖, x̃ the unit
 * vector along the int8 values. Per-vector scaling uses the whole int8 range.
 */
export function quantize(unit: Float32Array, out: Int8Array): number {
  const d = unit.length;
  let maxAbs = 0;
  for (let j = 0; j < d; j++) maxAbs = Math.max(maxAbs, Math.abs(unit[j] as number));
  const scale = maxAbs > 0 ? 127 / maxAbs : 0;
  let sumSquares = 0;
  for (let j = 0; j < d; j++) {
    const q = Math.round((unit[j] as number) * scale);
    out[j] = q;
    sumSquares += q * q;
  }
  if (sumSquares === 0) return 2;
  const inverseNorm = 1 / Math.sqrt(sumSquares);
  let residualSquares = 0;
  for (let j = 0; j < d; j++) residualSquares += ((unit[j] as number) - (out[j] as number) * inverseNorm) ** 2;
  return Math.sqrt(residualSquares);
}

/** The best `k` (row, score) pairs seen, kept sorted (k ≤ 100: insertion is cheap). */
export class TopK {
  readonly k: number;
  private readonly rows: Int32Array;
  private readonly scores: Float64Array;
  private size = 0;

  constructor(k: number) {
    this.k = k;
    this.rows = new Int32Array(k);
    this.scores = new Float64Array(k);
  }

  get full(): boolean {
    return this.size === this.k;
  }

  /** The k-th best score (only meaningful when full). */
  get threshold(): number {
    return this.scores[this.k - 1] as number;
  }

  offer(row: number, score: number): void {
    if (this.full && score <= this.threshold) return;
    let at = this.full ? this.k - 1 : this.size++;
    while (at > 0 && (this.scores[at - 1] as number) < score) {
      this.scores[at] = this.scores[at - 1] as number;
      this.rows[at] = this.rows[at - 1] as number;
      at--;
    }
    this.scores[at] = score;
    this.rows[at] = row;
  }

  sorted(): Array<{ row: number; cosine: number }> {
    const out: Array<{ row: number; cosine: number }> = [];
    for (let i = 0; i < this.size; i++) out.push({ row: this.rows[i] as number, cosine: this.scores[i] as number });
    return out;
  }
}

/** FNV-1a over the vector's float bits: equal vectors, equal checksums; a changed vector almost surely differs. */
export function vectorChecksum(unit: Float32Array): number {
  const bits = new Uint32Array(unit.buffer, unit.byteOffset, unit.length);
  let hash = 0x811c9dc5;
  for (let j = 0; j < bits.length; j++) hash = Math.imul(hash ^ (bits[j] as number), 0x01000193);
  return hash >>> 0;
}
