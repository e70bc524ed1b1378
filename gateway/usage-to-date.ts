// Dashboards' reads: key and environment lists show each
// one's usage to date (every call since it was created, live cost in
// USD and nano-dollars, calls) and when it was last used, from the ledger's
// per-key and per-environment counters — one read per page, not per item.
import { z } from "zod";
import type { UsageToDate } from "../tenancy/ledger.ts";
import { usd } from "../tenancy/billing.ts";

export type ReadUsageToDate = (ids: string[]) => Promise<Map<string, UsageToDate>>;

export const usageToDateSchema = z.object({
  cost_usd: z.number().min(0).describe("billed (live) cost to date, rounded to the micro-dollar"),
  cost_nanos: z.number().int().min(0),
  calls: z.number().int().min(0).describe("calls to date, live and test"),
});

/** Adds `usage` (and, where the item has none, `last_used_at`) to each item of a page. */
export async function withUsageToDate<T extends { id: string }>(
  page: { data: T[]; next_cursor: string | null },
  read: ReadUsageToDate | undefined,
): Promise<{ data: (T & { usage: z.infer<typeof usageToDateSchema>; last_used_at: string | null })[]; next_cursor: string | null }> {
  const found = read ? await read(page.data.map((item) => item.id)) : new Map<string, UsageToDate>();
  return {
    next_cursor: page.next_cursor,
    data: page.data.map((item) => {
      const u = found.get(item.id);
      // A key's own last_used_at is written at most once a minute; the ledger's is per call: the later wins.
      const own = (item as { last_used_at?: string | null }).last_used_at ?? null;
      const ledger = u?.last_used_at ?? null;
      return {
        ...item,
        last_used_at: own === null ? ledger : ledger === null || own > ledger ? own : ledger,
        usage: { cost_usd: usd(u?.cost_nanos ?? 0), cost_nanos: u?.cost_nanos ?? 0, calls: u?.calls ?? 0 },
      };
    }),
  };
}
