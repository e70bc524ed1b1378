// The benchmarks' account: signs up once, then makes one project per budget
// setting, each with a live key (billed, so budgets apply to it).
export interface BudgetSetting {
  monthly_limit_usd: number;
  hard_limit: boolean;
}

async function call(base: string, method: string, path: string, token: string | undefined, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function liveKeyFor(base: string) {
  const signup = await call(base, "POST", "/v1/auth/signup", undefined, { email: `bench-${Date.now()}@example.test`, password: "benchmark-password" });
  const session = String(signup["session_token"]);
  const orgId = String((signup["organization"] as { id: string }).id);
  let n = 0;
  return {
    /** A new project with `budget` (none when undefined); returns a live key of its production environment. */
    async project(budget: BudgetSetting | undefined): Promise<string> {
      n += 1;
      const created = await call(base, "POST", `/v1/orgs/${orgId}/projects`, session, { name: `bench ${n}` });
      const projectId = (created["project"] as { id: string }).id;
      const envId = (created["environments"] as { environment: { id: string } }[])[0]!.environment.id;
      if (budget) await call(base, "PUT", `/v1/projects/${projectId}/budget`, session, budget);
      const key = await call(base, "POST", `/v1/environments/${envId}/api-keys`, session, { name: "bench", live: true });
      return String(key["key"]);
    },
  };
}
