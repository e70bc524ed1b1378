// The account a load run bills: a new signup's default project and a LIVE key
// on its production environment, with a rate limit the load never reaches.

/** A new account's default project and a LIVE key on its production environment: the load is billed into the ledger. */
export async function liveAccount(url: string, name: string): Promise<{ key: string; projectId: string }> {
  const post = async (path: string, body: unknown, token?: string) => {
    const res = await fetch(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const signup = (await post("/v1/auth/signup", { email: `${name}-${Date.now()}@example.test`, password: `${name}-run-password` })) as {
    session_token: string;
    project: { id: string };
    environments: { environment: { id: string; production: boolean } }[];
  };
  const env = signup.environments.find((e) => e.environment.production)?.environment.id;
  const key = await post(`/v1/environments/${env}/api-keys`, { name, live: true, rate_limit_per_minute: 10_000_000 }, signup.session_token);
  return { key: String(key["key"]), projectId: signup.project.id };
}
