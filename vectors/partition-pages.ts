// The embedded partition's rows, stored in fixed-size pages. One contiguous
// array per field had to be doubled and copied to grow: at 65,536 rows × 768
// dimensions that allocated ~500 MB and copied ~250 MB on the event loop, a
// 332 ms stall in bench/vectors.ts. Here growth appends a page and never
// copies a stored row, except while the first page is still small: it starts
// at 64 rows (most partitions are small) and doubles until it reaches the
// page size; every later page is allocated at full size.
//
// Each page's arrays have their own buffer, so a page is a valid input to
// usearch's exact search (which reads typed arrays from their buffer's start).
import type { ExactPage, ExactRows } from "./exact-search.ts";
import { dot, quantize } from "./partition-math.ts";

/**
 * 16,384 rows: at 768 dimensions a page is 48 MB of float32 and 12 MB of
 * int8. The first page's last doubling copies ~30 MB and allocating a page
 * zeroes ~63 MB: measured at most 42 ms and 10–35 ms for one upsert on a
 * loaded 2-core machine, against 181 ms (65,536 rows) and 453 ms (131,072)
 * for doubling one array. Smaller pages would shorten those further but
 * multiply the per-page search calls; 100k rows are 7 pages, whose usearch
 * calls and top-k merge cost little next to the scan itself.
 */
export const defaultPageRows = 16_384;
const initialCapacityRows = 64;

interface Page {
  /** Unit vectors, row-major, capacity × dimensions. */
  data: Float32Array;
  /** Their int8 copies. */
  quantized: Int8Array;
  /** The partition row of this page's first row. */
  firstRow: number;
  /** ‖x − x̃‖ per row, x̃ the unit vector of the row's int8 copy. */
  residuals: Float32Array;
  /** Per row: the label its current vector has in the graph (never reused). */
  labels: Float64Array;
  /** Per row: vectorChecksum of its unit vector. */
  checksums: Uint32Array;
}

export class PartitionPages {
  readonly dimensions: number;
  readonly pageRows: number;
  private readonly pages: Page[];

  constructor(dimensions: number, pageRows = defaultPageRows) {
    if (!Number.isInteger(pageRows) || pageRows < 1) throw new RangeError(`pageRows must be a positive integer, got ${pageRows}`);
    this.dimensions = dimensions;
    this.pageRows = pageRows;
    this.pages = [this.allocate(Math.min(initialCapacityRows, pageRows), 0)];
  }

  /** Makes room for rows 0..row (rows are only ever appended one at a time). */
  ensureRow(row: number): void {
    const last = this.pages[this.pages.length - 1] as Page;
    if (row < last.firstRow + last.labels.length) return;
    if (this.pages.length === 1 && last.labels.length < this.pageRows) {
      // Still the small first page: doubling it copies at most half a page.
      const grown = this.allocate(Math.min(last.labels.length * 2, this.pageRows), 0);
      grown.data.set(last.data);
      grown.quantized.set(last.quantized);
      grown.residuals.set(last.residuals);
      grown.labels.set(last.labels);
      grown.checksums.set(last.checksums);
      this.pages[0] = grown;
      return;
    }
    this.pages.push(this.allocate(this.pageRows, this.pages.length * this.pageRows));
  }

  /** Stores the unit vector and its int8 copy in `row`; returns the row's residual. */
  write(row: number, unit: Float32Array, checksum: number): number {
    const page = this.pageOf(row);
    const at = row - page.firstRow;
    const d = this.dimensions;
    page.data.set(unit, at * d);
    const residual = quantize(unit, page.quantized.subarray(at * d, (at + 1) * d));
    page.residuals[at] = residual;
    page.checksums[at] = checksum;
    return residual;
  }

  /** Copies row `from` (any page) over row `to`. */
  move(from: number, to: number): void {
    const source = this.pageOf(from);
    const target = this.pageOf(to);
    const f = from - source.firstRow;
    const t = to - target.firstRow;
    const d = this.dimensions;
    target.data.set(source.data.subarray(f * d, (f + 1) * d), t * d);
    target.quantized.set(source.quantized.subarray(f * d, (f + 1) * d), t * d);
    target.residuals[t] = source.residuals[f] as number;
    target.labels[t] = source.labels[f] as number;
    target.checksums[t] = source.checksums[f] as number;
  }

  label(row: number): number {
    const page = this.pageOf(row);
    return page.labels[row - page.firstRow] as number;
  }

  setLabel(row: number, label: number): void {
    const page = this.pageOf(row);
    page.labels[row - page.firstRow] = label;
  }

  checksum(row: number): number {
    const page = this.pageOf(row);
    return page.checksums[row - page.firstRow] as number;
  }

  /** The labels of rows 0..count-1, in row order. */
  labels(count: number): number[] {
    const labels: number[] = [];
    for (let row = 0; row < count; row++) labels.push(this.label(row));
    return labels;
  }

  /** The float32 dot product of the row's unit vector with `query`. */
  dot(row: number, query: Float32Array): number {
    const page = this.pageOf(row);
    return dot(page.data, (row - page.firstRow) * this.dimensions, query, this.dimensions);
  }

  /** Writes the row's int8 copy into `out` at `offset`. */
  copyInt8(row: number, out: Int8Array, offset: number): void {
    const page = this.pageOf(row);
    const at = row - page.firstRow;
    out.set(page.quantized.subarray(at * this.dimensions, (at + 1) * this.dimensions), offset);
  }

  /** Rows 0..count-1 as the exact kernels read them: one entry per page holding rows. */
  exactRows(count: number): ExactRows {
    const pages: ExactPage[] = [];
    for (const page of this.pages) {
      if (page.firstRow >= count) break;
      pages.push({ data: page.data, quantized: page.quantized, firstRow: page.firstRow, count: Math.min(page.labels.length, count - page.firstRow) });
    }
    return { pages, count, dimensions: this.dimensions };
  }

  private pageOf(row: number): Page {
    // The first page holds fewer than pageRows rows only while it is the only page.
    return this.pages[Math.floor(row / this.pageRows)] as Page;
  }

  private allocate(rows: number, firstRow: number): Page {
    const d = this.dimensions;
    return {
      data: new Float32Array(rows * d),
      quantized: new Int8Array(rows * d),
      residuals: new Float32Array(rows),
      labels: new Float64Array(rows),
      checksums: new Uint32Array(rows),
      firstRow,
    };
  }
}
