// The address clients reach this Troupe at: PUBLIC_URL when set, else the
// listen address. The gateway listens before any feature starts, so every
// reader (file URLs in answers, result URLs of jobs re-armed at start) runs
// after it is known; a read before that is a bug, and throws instead of
// handing out a relative URL.
export class PublicUrl {
  private value: string | undefined;

  constructor(configured: string | undefined) {
    this.value = configured?.replace(/\/$/, "");
  }

  /** Called once the gateway listens (kept when PUBLIC_URL was configured). */
  listening(host: string, port: number): string {
    const shownHost = host === "0.0.0.0" || host === "::" ? "localhost" : host;
    this.value ??= `http://${shownHost}:${port}`;
    return this.value;
  }

  get base(): string {
    if (this.value === undefined) throw new Error("the public URL is read before the gateway listens");
    return this.value;
  }
}
