// `stop_sequences`, applied by the gateway: no provider adapter takes them,
// so the answer's text is cut before the first stop sequence and the
// message ends with stop_reason "stop_sequence". The provider still
// generates up to its own end; the usage (and the bill) counts what it
// generated.

/** The earliest stop sequence in `text`: where it starts and which one. */
export function findStop(text: string, sequences: readonly string[]): { index: number; sequence: string } | undefined {
  let best: { index: number; sequence: string } | undefined;
  for (const sequence of sequences) {
    const index = text.indexOf(sequence);
    if (index !== -1 && (best === undefined || index < best.index)) best = { index, sequence };
  }
  return best;
}

/**
 * The same over a stream of text fragments: text that could be the start of
 * a stop sequence is held back until the next fragment tells, so nothing
 * past a stop sequence is ever sent.
 */
export class StopSequenceFilter {
  private held = "";
  /** The sequence that stopped the text, once one did. */
  stoppedBy: string | undefined;

  private readonly sequences: readonly string[];

  constructor(sequences: readonly string[]) {
    this.sequences = sequences;
  }

  /** The part of `fragment` (with what was held) that is safe to send now. */
  push(fragment: string): string {
    if (this.stoppedBy !== undefined) return "";
    if (this.sequences.length === 0) return fragment;
    const text = this.held + fragment;
    const stop = findStop(text, this.sequences);
    if (stop) {
      this.stoppedBy = stop.sequence;
      this.held = "";
      return text.slice(0, stop.index);
    }
    const keep = this.partialSuffix(text);
    this.held = text.slice(text.length - keep);
    return text.slice(0, text.length - keep);
  }

  /** What is still held when the text ends (it did not become a stop sequence). */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** The length of the longest suffix of `text` that begins some stop sequence. */
  private partialSuffix(text: string): number {
    let longest = 0;
    for (const sequence of this.sequences) {
      for (let n = Math.min(sequence.length - 1, text.length); n > longest; n--) {
        if (text.endsWith(sequence.slice(0, n))) {
          longest = n;
          break;
        }
      }
    }
    return longest;
  }
}
