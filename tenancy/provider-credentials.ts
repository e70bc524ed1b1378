// An organization's own provider credentials (bring your own key,
// docs/operations/byok.md): one per provider for the whole organization, or
// for one of its environments (which then wins for that environment's keys).
// Write-only: a key is sealed (AES-256-GCM, core/secret-box.ts, under the
// same WEBHOOK_SECRET_KEY as webhook secrets) before it is stored, and only
// its last four characters are ever shown again. Each write gets a new
// `version`, so a replaced key never reuses the adapter made for the old one.
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { TroupeError } from "../core/errors.ts";
import type { Clock } from "../core/clock.ts";
import { isoTime } from "../core/clock.ts";
import { indexMembers, type DataStore, type StoreOp } from "../core/data-store.ts";
import type { SecretBox } from "../core/secret-box.ts";

/** Where a credential applies: the whole organization, or one environment of it. */
const orgScope = "org";

const storedSchema = z.object({
  organization_id: z.string(),
  environment_id: z.string().nullable(),
  provider: z.string(),
  sealed_key: z.string(),
  last4: z.string(),
  allow_fallback: z.boolean(),
  version: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
type StoredCredential = z.infer<typeof storedSchema>;

/** What the API shows of a credential: never the key. */
export const providerCredentialViewSchema = z.object({
  provider: z.string(),
  environment_id: z.string().nullable().describe("null: the whole organization; else only this environment's keys use it (and prefer it)"),
  last4: z.string().describe("The key's last four characters: all that is ever shown of it again"),
  allow_fallback: z.boolean().describe("When the provider refuses this key: true, Troupe's own key serves the call; false, 403 provider_credential_rejected"),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ProviderCredentialView = z.infer<typeof providerCredentialViewSchema>;

/** An opened credential, for the router (never leaves the process). */
export interface OpenedCredential {
  provider: string;
  apiKey: string;
  allowFallback: boolean;
  version: string;
  /** How an error names it: scope and last four characters. */
  label: string;
}

const keys = {
  credential: (orgId: string, scope: string, provider: string) => `pcred:${orgId}:${scope}:${provider}`,
  index: (orgId: string) => `pcred-index:${orgId}`,
};

function viewOf(c: StoredCredential): ProviderCredentialView {
  return { provider: c.provider, environment_id: c.environment_id, last4: c.last4, allow_fallback: c.allow_fallback, created_at: c.created_at, updated_at: c.updated_at };
}

function labelOf(c: Pick<StoredCredential, "environment_id" | "last4" | "provider">): string {
  return `${c.provider} key …${c.last4} stored for ${c.environment_id === null ? "the organization" : `environment ${c.environment_id}`}`;
}

export class ProviderCredentialStore {
  private readonly store: DataStore;
  private readonly box: SecretBox;
  private readonly clock: Clock;

  constructor(store: DataStore, box: SecretBox, clock: Clock) {
    this.store = store;
    this.box = box;
    this.clock = clock;
  }

  /** Stores (or replaces) the organization's key for `provider`; answers what may be shown of it. */
  async put(orgId: string, provider: string, input: { apiKey: string; environmentId: string | null; allowFallback: boolean }): Promise<ProviderCredentialView> {
    const scope = input.environmentId ?? orgScope;
    const key = keys.credential(orgId, scope, provider);
    const previous = storedSchema.safeParse(await this.store.get(key));
    const now = isoTime(this.clock.now());
    const record: StoredCredential = {
      organization_id: orgId,
      environment_id: input.environmentId,
      provider,
      sealed_key: this.box.seal(input.apiKey),
      last4: input.apiKey.slice(-4),
      allow_fallback: input.allowFallback,
      version: randomBytes(9).toString("base64url"),
      created_at: previous.success ? previous.data.created_at : now,
      updated_at: now,
    };
    await this.store.apply([
      { op: "put", key, value: record },
      { op: "index", key: keys.index(orgId), member: `${scope}:${provider}`, score: this.clock.now() },
    ]);
    return viewOf(record);
  }

  async list(orgId: string): Promise<ProviderCredentialView[]> {
    const members = await indexMembers(this.store, keys.index(orgId));
    const docs = await this.store.getMany(members.map((m) => this.keyOfMember(orgId, m)));
    return docs.flatMap((d) => {
      const parsed = storedSchema.safeParse(d);
      return parsed.success ? [viewOf(parsed.data)] : [];
    });
  }

  /** Removes one credential; 404 when there is none. */
  async delete(orgId: string, provider: string, environmentId: string | null): Promise<void> {
    const scope = environmentId ?? orgScope;
    const key = keys.credential(orgId, scope, provider);
    if ((await this.store.get(key)) === undefined) throw new TroupeError("not_found", `no ${provider} credential stored for ${environmentId ?? "the organization"}`);
    await this.store.apply([
      { op: "delete", key },
      { op: "unindex", key: keys.index(orgId), member: `${scope}:${provider}` },
    ]);
  }

  /** Whether the organization stored any credential (any provider, any environment): one index page of one member. */
  async storedAny(orgId: string): Promise<boolean> {
    return (await this.store.page(keys.index(orgId), 1, null)).members.length > 0;
  }

  /** The credential a call from this environment uses for `provider`: the environment's, else the organization's. */
  async resolve(orgId: string, environmentId: string, provider: string): Promise<OpenedCredential | undefined> {
    const [own, org] = await this.store.getMany([keys.credential(orgId, environmentId, provider), keys.credential(orgId, orgScope, provider)]);
    for (const doc of [own, org]) {
      const parsed = storedSchema.safeParse(doc);
      if (!parsed.success) continue;
      const c = parsed.data;
      return { provider, apiKey: this.box.open(c.sealed_key), allowFallback: c.allow_fallback, version: c.version, label: labelOf(c) };
    }
    return undefined;
  }

  private keyOfMember(orgId: string, member: string): string {
    const cut = member.lastIndexOf(":");
    return keys.credential(orgId, member.slice(0, cut), member.slice(cut + 1));
  }
}

/** Deleting an organization: the ops that remove every credential it stored (tenancy/organization-erasure.ts). */
export async function providerCredentialErasureOps(store: DataStore, orgId: string): Promise<StoreOp[]> {
  const members = await indexMembers(store, keys.index(orgId));
  const ops: StoreOp[] = [];
  for (const m of members) {
    const cut = m.lastIndexOf(":");
    ops.push({ op: "delete", key: keys.credential(orgId, m.slice(0, cut), m.slice(cut + 1)) }, { op: "unindex", key: keys.index(orgId), member: m });
  }
  return ops;
}
