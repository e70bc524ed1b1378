// The cache store of embedded mode: lmdb under TROUPE_DATA_DIR/cache
// (entries survive a restart), with each organization's entries also listed
// in memory in least-recently-used order, so the quota check and eviction
// never scan the database. One process owns an embedded data directory, so
// that list is the only one.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import type { Clock } from "../../core/clock.ts";
import { decodeEntry, decodeEntrySync, encodeEntry, entryJson, entryJsonBytes, servable, trustedEntry } from "./entry-codec.ts";
import type { CacheEntry, CacheScope, CacheStore } from "./types.ts";

export interface CacheLimits {
  /** Stored (compressed) bytes per organization; past it the least recently used entries go. */
  orgQuotaBytes: number;
  /** An answer whose JSON is larger is not stored. */
  maxEntryBytes: number;
}

interface Listed {
  bytes: number;
  projectId: string;
  /** The entry's JSON as last decoded: a hit on a recently used answer skips lmdb, inflate and the schema (one process owns the directory, so it cannot go stale). Dropped past `decodedBudget`. */
  decoded?: string | undefined;
}

/** JSON bytes of decoded entries kept in memory, all organizations (16 MiB: thousands of typical answers). */
const decodedBudget = 16 * 1024 * 1024;

/** Keys are `<organization>\n<digest>`: an organization's entries are one lmdb range. */
const keyOf = (organizationId: string, digest: string): string => `${organizationId}\n${digest}`;

export class EmbeddedCacheStore implements CacheStore {
  private readonly root: RootDatabase;
  private readonly entries: Database<Buffer, string>;
  /** Per organization: digest → size, oldest use first (a Map keeps insertion order; a use re-inserts). */
  private readonly lru = new Map<string, Map<string, Listed>>();
  private readonly totals = new Map<string, number>();
  /** Listings holding a decoded entry, oldest first, and their JSON bytes (bounded by decodedBudget). */
  private readonly decodedOrder = new Map<Listed, number>();
  private decodedBytes = 0;
  private readonly limits: CacheLimits;
  private readonly clock: Clock;

  constructor(dataDir: string, limits: CacheLimits, clock: Clock) {
    const dir = join(dataDir, "cache");
    mkdirSync(dir, { recursive: true });
    this.root = open({ path: join(dir, "cache.lmdb"), compression: false });
    this.entries = this.root.openDB<Buffer, string>({ name: "entries", encoding: "binary" });
    this.limits = limits;
    this.clock = clock;
    this.loadListing();
  }

  async get(scope: CacheScope, digest: string): Promise<CacheEntry | undefined> {
    const listed = this.lru.get(scope.organization_id)?.get(digest);
    if (!listed) return undefined;
    let entry = listed.decoded === undefined ? undefined : trustedEntry(listed.decoded);
    if (!entry) {
      const bytes = this.entries.get(keyOf(scope.organization_id, digest));
      if (!bytes) return undefined;
      entry = await decodeEntry(bytes);
      if (entry) this.keepDecoded(listed, entry);
    }
    if (!entry || !servable(entry, scope.organization_id, scope.project_id, scope.environment_id, this.clock.now())) {
      // Expired (or not this scope's: then the digest collided, and the entry is left to its owner).
      if (entry && entry.expires_ms <= this.clock.now()) await this.remove(scope.organization_id, digest);
      return undefined;
    }
    this.touch(scope.organization_id, digest, listed);
    return entry;
  }

  async put(digest: string, entry: CacheEntry): Promise<number> {
    const { bytes, jsonBytes } = await encodeEntry(entry);
    if (jsonBytes > this.limits.maxEntryBytes || bytes.length > this.limits.orgQuotaBytes) return 0;
    const org = entry.scope.organization_id;
    await this.remove(org, digest);
    await this.entries.put(keyOf(org, digest), bytes);
    this.list(org, digest, { bytes: bytes.length, projectId: entry.scope.project_id });
    await this.evictPastQuota(org);
    return bytes.length;
  }

  async delete(scope: CacheScope, digest: string): Promise<void> {
    await this.remove(scope.organization_id, digest);
  }

  async clearProject(organizationId: string, projectId: string): Promise<number> {
    const listed = this.lru.get(organizationId);
    if (!listed) return 0;
    const digests = [...listed].filter(([, l]) => l.projectId === projectId).map(([d]) => d);
    for (const d of digests) await this.remove(organizationId, d);
    return digests.length;
  }

  async clearOrganization(organizationId: string): Promise<void> {
    // From the database itself, not the listing: nothing of the organization may stay, listed or not.
    const keys = [...this.entries.getKeys({ start: `${organizationId}\n`, end: `${organizationId}\n\uffff` })];
    await this.entries.transaction(() => {
      for (const k of keys) void this.entries.remove(k);
    });
    for (const listed of this.lru.get(organizationId)?.values() ?? []) this.forgetDecoded(listed);
    this.lru.delete(organizationId);
    this.totals.delete(organizationId);
  }

  async bytesOf(organizationId: string): Promise<number> {
    return this.totals.get(organizationId) ?? 0;
  }

  heldBytes(): number {
    let total = 0;
    for (const bytes of this.totals.values()) total += bytes;
    return total;
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  private async evictPastQuota(org: string): Promise<void> {
    const listed = this.lru.get(org);
    while (listed && (this.totals.get(org) ?? 0) > this.limits.orgQuotaBytes) {
      const oldest = listed.keys().next();
      if (oldest.done) break;
      await this.remove(org, oldest.value);
    }
  }

  private keepDecoded(listed: Listed, entry: CacheEntry): void {
    const size = entryJsonBytes(entry);
    if (size > decodedBudget / 64) return;
    listed.decoded = entryJson(entry);
    this.decodedOrder.set(listed, size);
    this.decodedBytes += size;
    for (const [oldest, bytes] of this.decodedOrder) {
      if (this.decodedBytes <= decodedBudget) break;
      this.forgetDecoded(oldest, bytes);
    }
  }

  private forgetDecoded(listed: Listed, bytes = this.decodedOrder.get(listed)): void {
    if (bytes === undefined) return;
    listed.decoded = undefined;
    this.decodedOrder.delete(listed);
    this.decodedBytes -= bytes;
  }

  private touch(org: string, digest: string, listed: Listed): void {
    const map = this.lru.get(org);
    if (!map) return;
    map.delete(digest);
    map.set(digest, listed);
  }

  private list(org: string, digest: string, listed: Listed): void {
    let map = this.lru.get(org);
    if (!map) this.lru.set(org, (map = new Map()));
    map.set(digest, listed);
    this.totals.set(org, (this.totals.get(org) ?? 0) + listed.bytes);
  }

  private async remove(org: string, digest: string): Promise<void> {
    const map = this.lru.get(org);
    const listed = map?.get(digest);
    if (map && listed) {
      this.forgetDecoded(listed);
      map.delete(digest);
      this.totals.set(org, (this.totals.get(org) ?? 0) - listed.bytes);
    }
    await this.entries.remove(keyOf(org, digest));
  }

  /** At open: the listing rebuilt from the database (use order is lost on restart; entries then age from their storing). */
  private loadListing(): void {
    const found: { org: string; digest: string; stored: number; listed: Listed }[] = [];
    for (const { key, value } of this.entries.getRange()) {
      const at = key.indexOf("\n");
      const entry = decodeEntrySync(value);
      // Unreadable (another version's): listed under no project, so the quota still counts it and eviction or the org's deletion removes it.
      found.push({ org: key.slice(0, at), digest: key.slice(at + 1), stored: entry?.stored_ms ?? 0, listed: { bytes: value.length, projectId: entry?.scope.project_id ?? "" } });
    }
    found.sort((a, b) => a.stored - b.stored);
    for (const f of found) this.list(f.org, f.digest, f.listed);
  }
}
