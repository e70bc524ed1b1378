// Admission (gateway/admission.ts) built in process, with an authenticator
// and a rate limiter that record their calls and answer as told: which
// credential kind each auth mode takes, the scope check's cases and its exact
// refusal (route scope, "all", the input scope), the rate-limit window on the
// answer (a new object) or none (the same one), the key a refusal belongs to
// (refusedKeyOf), enterCall and reserveTokens. Fast on purpose: the mutation
// run (stryker.config.json) runs this file once per mutant; the socket-level
// behaviour is in admission.test.ts.
import t from "tap";
import { TroupeError } from "../../core/errors.ts";
import { checkInputScope, createAdmission, refusedKeyOf, type AdmissionPolicy, type RateLimiter } from "../../gateway/admission.ts";
import type { ApiKeyAuth, AuthContext, SessionAuth } from "../../gateway/auth-context.ts";
import type { Authenticator } from "../../gateway/authenticate.ts";
import type { AuthMode } from "../../gateway/route.ts";
import type { RateLimitWindow } from "../../tenancy/key-rate-limit.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";

function keyWith(scopes: string[], tokenLimit: number | null = null): ApiKeyRecord {
  return { id: "key_1", scopes, rate_limit_per_minute: 10, token_limit_per_minute: tokenLimit } as unknown as ApiKeyRecord;
}

const session: SessionAuth = { kind: "session", userId: "u", sessionId: "s", tokenHash: "h", csrfToken: "c", viaCookie: false };
const none: AuthContext = { kind: "none" };
const window: RateLimitWindow = { limit: 10, remaining: 9, resetSeconds: 60 };

interface Rig {
  admission: ReturnType<typeof createAdmission>;
  /** What the authenticator returns next. */
  credential: { next: AuthContext | Promise<AuthContext> };
  /** What the limiter does next (return a window, nothing, a promise, or throw). */
  limit: { next: (key: ApiKeyRecord) => ReturnType<RateLimiter["checkRateLimit"]> };
  authCalls: unknown[][];
  limiterCalls: ApiKeyRecord[];
}

function rig(extra: Partial<RateLimiter> = {}): Rig {
  const credential: Rig["credential"] = { next: none };
  const limit: Rig["limit"] = { next: () => undefined };
  const authCalls: unknown[][] = [];
  const limiterCalls: ApiKeyRecord[] = [];
  const authenticator: Authenticator = {
    authenticate: (...args) => {
      authCalls.push(args);
      return credential.next;
    },
  };
  const admission = createAdmission(authenticator, {
    checkRateLimit: (key) => {
      limiterCalls.push(key);
      return limit.next(key);
    },
    ...extra,
  });
  return { admission, credential, limit, authCalls, limiterCalls };
}

/** The error admit threw or rejected with; undefined when it admitted. */
async function refusal(r: Rig, policy: AdmissionPolicy): Promise<unknown> {
  try {
    await r.admission.admit(policy, "GET", {});
    return undefined;
  } catch (error) {
    return error;
  }
}

t.test("the authenticator gets the policy, method, headers and query as given", async (t) => {
  const r = rig();
  const policy: AdmissionPolicy = { auth: "none", apiKeyHeader: "x-api-key", apiKeyQuery: "key" };
  const headers = { authorization: "Bearer x" };
  r.admission.admit(policy, "POST", headers, "key=abc");
  t.equal(r.authCalls.length, 1);
  t.equal(r.authCalls[0]?.[0], policy);
  t.equal(r.authCalls[0]?.[1], "POST");
  t.equal(r.authCalls[0]?.[2], headers);
  t.equal(r.authCalls[0]?.[3], "key=abc");
});

t.test("each auth mode takes exactly its credential kinds", async (t) => {
  const apiKey: ApiKeyAuth = { kind: "api_key", key: keyWith([]) };
  const credentials: AuthContext[] = [none, session, apiKey];
  const takes: Record<AuthMode, string[]> = { none: ["none"], session: ["session"], api_key: ["api_key"], any: ["session", "api_key"] };
  for (const mode of ["none", "session", "api_key", "any"] as const) {
    for (const credential of credentials) {
      const r = rig();
      r.credential.next = credential;
      const label = `${mode} with a ${credential.kind} credential`;
      if (takes[mode].includes(credential.kind)) {
        const admitted = r.admission.admit({ auth: mode }, "GET", {});
        t.notOk(admitted instanceof Promise, `${label}: admitted synchronously`);
        t.equal((admitted as AuthContext).kind, credential.kind, `${label}: admitted`);
      } else {
        const error = await refusal(r, { auth: mode });
        t.ok(error instanceof TroupeError, `${label}: refused with a TroupeError`);
        t.match(error, { code: "forbidden", message: `this endpoint does not take a ${credential.kind} credential` }, `${label}: refused`);
        t.equal(refusedKeyOf(error), undefined, `${label}: the refusal belongs to no key`);
        t.equal(r.limiterCalls.length, 0, `${label}: no rate limit spent`);
      }
    }
  }
});

t.test("a session or no credential comes back as it is, without the rate limiter", async (t) => {
  const r = rig();
  r.limit.next = () => window;
  r.credential.next = session;
  t.equal(r.admission.admit({ auth: "session", scope: "chat" }, "GET", {}), session);
  r.credential.next = none;
  t.equal(r.admission.admit({ auth: "none" }, "GET", {}), none);
  t.equal(r.limiterCalls.length, 0);
});

t.test("the route scope: who passes, who is refused and how", async (t) => {
  const cases: { scopes: string[]; scope: AdmissionPolicy["scope"]; admitted: boolean }[] = [
    { scopes: ["chat"], scope: undefined, admitted: true },
    { scopes: [], scope: "chat", admitted: true },
    { scopes: [], scope: "all", admitted: true },
    { scopes: ["images", "chat"], scope: "chat", admitted: true },
    { scopes: ["images"], scope: "chat", admitted: false },
    { scopes: ["chat"], scope: "all", admitted: false },
    // "all" is a route's demand (every category), never a scope a key holds: a stored record that lists it is still scoped.
    { scopes: ["all"], scope: "all", admitted: false },
  ];
  for (const c of cases) {
    const r = rig();
    const key = keyWith(c.scopes);
    const auth: ApiKeyAuth = { kind: "api_key", key };
    r.credential.next = auth;
    const label = `scopes [${c.scopes.join(",")}], route scope ${c.scope ?? "none"}`;
    const error = await refusal(r, { auth: "api_key", ...(c.scope ? { scope: c.scope } : {}) });
    if (c.admitted) {
      t.equal(error, undefined, `${label}: admitted`);
      t.same(r.limiterCalls, [key], `${label}: the rate limit counted once, for the key`);
    } else {
      t.ok(error instanceof TroupeError, `${label}: a TroupeError`);
      t.match(error, { code: "insufficient_scope" }, `${label}: refused`);
      t.equal(refusedKeyOf(error), auth, `${label}: the refusal belongs to the key`);
      t.equal(r.limiterCalls.length, 0, `${label}: the rate limit is not spent`);
    }
  }
});

t.test("the scope refusals' messages and details", async (t) => {
  const r = rig();
  r.credential.next = { kind: "api_key", key: keyWith(["images", "audio"]) };
  const missing = await refusal(r, { auth: "api_key", scope: "chat" });
  t.match(missing, {
    code: "insufficient_scope",
    message: `this API key's scopes (images, audio) do not include "chat"`,
    details: { required_scope: "chat", key_scopes: ["images", "audio"] },
  });
  t.equal((missing as TroupeError).message, `this API key's scopes (images, audio) do not include "chat"`);
  const all = await refusal(r, { auth: "api_key", scope: "all" });
  t.equal((all as TroupeError).message, "this endpoint needs an API key that grants every category (an empty scope list); this key's scopes are images, audio");
  t.match(all, { details: { required_scope: "all", key_scopes: ["images", "audio"] } });
});

t.test("the input scope", async (t) => {
  const scoped: ApiKeyAuth = { kind: "api_key", key: keyWith(["chat"]) };
  t.doesNotThrow(() => checkInputScope(scoped, undefined), "no input scope: nothing to check");
  t.doesNotThrow(() => checkInputScope(scoped, "chat"), "a scope the key has");
  t.doesNotThrow(() => checkInputScope({ kind: "api_key", key: keyWith([]) }, "vision"), "an unscoped key");
  t.doesNotThrow(() => checkInputScope(session, "vision"), "a session has no scopes");
  t.doesNotThrow(() => checkInputScope(none, "vision"), "nor does no credential");
  let error: unknown;
  try {
    checkInputScope(scoped, "vision");
  } catch (e) {
    error = e;
  }
  t.ok(error instanceof TroupeError);
  t.match(error, { code: "insufficient_scope", details: { required_scope: "vision", key_scopes: ["chat"] } });
  t.equal((error as TroupeError).message, `this API key's scopes (chat) do not include "vision" (this request's input needs it)`);
});

t.test("the rate-limit window on the answer", async (t) => {
  const r = rig();
  const key = keyWith([]);
  const auth: ApiKeyAuth = { kind: "api_key", key };
  r.credential.next = auth;

  r.limit.next = () => window;
  const withWindow = r.admission.admit({ auth: "api_key" }, "GET", {});
  t.notOk(withWindow instanceof Promise, "a synchronous limiter: admitted synchronously");
  t.not(withWindow, auth, "a new object per request: the authenticator's may be shared");
  t.same(withWindow, { kind: "api_key", key, rateLimit: window });
  t.equal((withWindow as ApiKeyAuth).key, key);
  t.equal(auth.rateLimit, undefined, "the authenticator's object is left alone");

  r.limit.next = () => undefined;
  t.equal(r.admission.admit({ auth: "api_key" }, "GET", {}), auth, "no window: the same object");

  r.limit.next = () => Promise.resolve(window);
  const later = r.admission.admit({ auth: "api_key" }, "GET", {});
  t.ok(later instanceof Promise, "a limiter that needs I/O: admitted asynchronously");
  t.same(await later, { kind: "api_key", key, rateLimit: window });

  r.limit.next = () => Promise.resolve(undefined);
  t.equal(await r.admission.admit({ auth: "api_key" }, "GET", {}), auth);

  r.credential.next = Promise.resolve(auth);
  r.limit.next = () => window;
  const cold = r.admission.admit({ auth: "api_key" }, "GET", {});
  t.ok(cold instanceof Promise, "a cold credential: asynchronous");
  t.same(await cold, { kind: "api_key", key, rateLimit: window });
  r.credential.next = Promise.resolve(session);
  await t.rejects(Promise.resolve(r.admission.admit({ auth: "api_key" }, "GET", {})), { code: "forbidden" }, "a cold credential of the wrong kind is refused too");
  t.equal(r.limiterCalls.length, 5);
});

t.test("a rate-limit refusal belongs to the key, thrown or rejected", async (t) => {
  const r = rig();
  const auth: ApiKeyAuth = { kind: "api_key", key: keyWith([]) };
  r.credential.next = auth;
  const thrown = new TroupeError("rate_limited");
  r.limit.next = () => {
    throw thrown;
  };
  t.equal(await refusal(r, { auth: "api_key" }), thrown);
  t.equal(refusedKeyOf(thrown), auth);

  const rejected = new TroupeError("rate_limited");
  r.limit.next = () => Promise.reject(rejected);
  const result = r.admission.admit({ auth: "api_key" }, "GET", {});
  t.ok(result instanceof Promise);
  await t.rejects(Promise.resolve(result), rejected);
  t.equal(refusedKeyOf(rejected), auth);

  r.limit.next = () => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a broken limiter could throw
    throw "not an object";
  };
  t.equal(await refusal(r, { auth: "api_key" }), "not an object", "a thrown non-object passes through");
  t.equal(refusedKeyOf("not an object"), undefined);
  r.limit.next = () => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- what a broken limiter could throw
    throw null;
  };
  t.equal(await refusal(r, { auth: "api_key" }), null, "a thrown null passes through (it cannot be a WeakMap key)");
  t.equal(refusedKeyOf(null), undefined);
  t.equal(refusedKeyOf(undefined), undefined);
  t.equal(refusedKeyOf(new TroupeError("rate_limited")), undefined, "an error admission never saw");
});

t.test("enterCall: an API key's calls in flight", async (t) => {
  const ended: string[] = [];
  const entered: ApiKeyRecord[] = [];
  const end = (): void => void ended.push("ended");
  const r = rig({
    enterCall: (key) => {
      entered.push(key);
      return end;
    },
  });
  const key = keyWith([]);
  t.equal(r.admission.enterCall?.({ kind: "api_key", key }), end, "the limiter's end function comes back");
  t.same(entered, [key]);
  t.equal(r.admission.enterCall?.(session), undefined, "a session is not counted");
  t.equal(r.admission.enterCall?.(none), undefined);
  t.equal(entered.length, 1);
  t.equal(rig().admission.enterCall?.({ kind: "api_key", key }), undefined, "a limiter without enterCall counts nothing");
});

t.test("reserveTokens: only an API key with a token limit", async (t) => {
  const reserved: unknown[][] = [];
  const release = (): void => undefined;
  const r = rig({
    reserveTokens: (...args) => {
      reserved.push(args);
      return release;
    },
  });
  const limited = keyWith([], 1000);
  t.equal(r.admission.reserveTokens?.({ kind: "api_key", key: limited }, "req_1", 250), release);
  t.same(reserved, [[limited, "req_1", 250]]);
  t.equal(r.admission.reserveTokens?.({ kind: "api_key", key: keyWith([], 0) }, "req_2", 5), release, "a limit of 0 is a limit");
  t.equal(reserved.length, 2);
  t.equal(r.admission.reserveTokens?.({ kind: "api_key", key: keyWith([], null) }, "req_3", 250), undefined, "no token limit: nothing reserved");
  t.equal(r.admission.reserveTokens?.(session, "req_4", 250), undefined, "a session reserves nothing");
  t.equal(r.admission.reserveTokens?.(none, "req_5", 250), undefined);
  t.equal(reserved.length, 2);
  t.equal(rig().admission.reserveTokens?.({ kind: "api_key", key: limited }, "req_6", 250), undefined, "a limiter without reserveTokens reserves nothing");
});
