// Who holds something open with an API key: long-lived connections (the
// conversation events WebSocket) register a closer under the key id, and a
// revocation, local or broadcast from another replica, runs every closer of
// that key. Without this a socket authenticated once would keep streaming
// after its key was revoked, since nothing re-checks the key on a socket.
import { z } from "zod";

/** What the revocation broadcast carries between replicas. */
export const revocationMessageSchema = z.object({ key_id: z.string(), key_hash: z.string() });
export type RevocationMessage = z.infer<typeof revocationMessageSchema>;

export type Closer = () => void;

export class KeyRevocations {
  private readonly closers = new Map<string, Set<Closer>>();

  /** Registers a closer for key `keyId`; call the returned function when the connection ends by itself. */
  watch(keyId: string, close: Closer): () => void {
    let set = this.closers.get(keyId);
    if (!set) this.closers.set(keyId, (set = new Set()));
    set.add(close);
    return () => {
      const current = this.closers.get(keyId);
      if (!current) return;
      current.delete(close);
      if (current.size === 0) this.closers.delete(keyId);
    };
  }

  /** Runs (once) every closer registered for the revoked key. */
  revoked(keyId: string): number {
    const set = this.closers.get(keyId);
    if (!set) return 0;
    this.closers.delete(keyId);
    for (const close of set) close();
    return set.size;
  }

  /** The keys with open connections. */
  keyIds(): string[] {
    return [...this.closers.keys()];
  }

  /** Open connections across all keys (for tests and diagnostics). */
  get size(): number {
    let total = 0;
    for (const set of this.closers.values()) total += set.size;
    return total;
  }
}
