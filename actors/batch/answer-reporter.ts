// Reports a batch's stored answers to its BatchActor in groups. Each report
// is one data-store write (the answers) and one actor turn (counting them,
// a state write); sent per line they were most of a line's CPU on the event
// loop, taken from the interactive calls beside the batch. Answers arriving
// close together are reported together: a group goes when it holds
// `maxGroup` answers, when no other line of the driver is in its model call
// (nothing else is coming soon), or `windowMs` after its first answer. An
// answer is still stored before it is counted, so a crash between the two
// runs those lines again.
import type { LineResult } from "./batch-files.ts";

export interface StoredAnswer {
  index: number;
  result: LineResult;
}

interface Waiting extends StoredAnswer {
  resolve(): void;
  reject(error: unknown): void;
}

export class AnswerReporter {
  private pending: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly send: (answers: readonly StoredAnswer[]) => Promise<void>;
  private readonly running: () => number;
  private readonly windowMs: number;
  private readonly maxGroup: number;

  /** `send`: stores and counts a group; `running`: the driver's lines in their model call (the reporting one included). */
  constructor(send: (answers: readonly StoredAnswer[]) => Promise<void>, running: () => number, limits: { windowMs: number; maxGroup: number }) {
    this.send = send;
    this.running = running;
    this.windowMs = limits.windowMs;
    this.maxGroup = limits.maxGroup;
  }

  /** Settles once the answer is stored and counted (rejects when its group could not be). */
  report(index: number, result: LineResult): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ index, result, resolve, reject });
      if (this.pending.length >= this.maxGroup || this.running() <= 1) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) return;
    this.send(group).then(
      () => group.forEach((w) => w.resolve()),
      (error: unknown) => group.forEach((w) => w.reject(error)),
    );
  }
}
