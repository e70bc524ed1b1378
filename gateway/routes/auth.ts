// Signup, login and logout (docs/api/auth-and-accounts.md). Login sets an
// httpOnly session cookie and returns the same token for bearer use; the
// readable CSRF cookie/token must accompany cookie-authenticated changes.
import { z } from "zod";
import type { TenancyConfig } from "../../core/config.ts";
import type { AccountService, SessionGrant } from "../../tenancy/accounts.ts";
import { MAX_PASSWORD_CHARS } from "../../tenancy/passwords.ts";
import { formBodyMaxBytes } from "../body-limits.ts";
import { csrfCookie, sessionCookie } from "../authenticate.ts";
import { defineRoute, json, type RouteContext } from "../route.ts";
import { text } from "../../core/text-schema.ts";
import { email, environmentWithKeySchema, name, organizationSchema, projectSchema, sessionGrantSchema, userSchema } from "../schemas.ts";

const signupBody = z
  .object({
    email,
    password: text({ min: 10, max: MAX_PASSWORD_CHARS }),
    name: name.optional(),
    organization_name: name.optional(),
  })
  .strict();

// Login takes any password signup could have stored: a wrong one is a 401
// whatever its length. A longer one no account has, and it is refused (400)
// before anything is hashed.
const loginBody = z.object({ email: text({ max: 1024 }), password: text({ max: MAX_PASSWORD_CHARS }) }).strict();

function setSessionCookies(ctx: RouteContext<unknown, unknown>, grant: SessionGrant, ttlSeconds: number): void {
  ctx.setCookie({ name: sessionCookie, value: grant.session_token, maxAgeSeconds: ttlSeconds, httpOnly: true });
  ctx.setCookie({ name: csrfCookie, value: grant.csrf_token, maxAgeSeconds: ttlSeconds, httpOnly: false });
}

/**
 * Signup and login both open a session: public routes that still refuse an
 * API key, whose handler sets the session and CSRF cookies from the grant and
 * answers it (the body carries the same tokens, for bearer use).
 */
function opensSession<Body, G extends SessionGrant>(status: number, config: TenancyConfig, open: (body: Body, clientAddress: string) => Promise<G>) {
  return {
    tag: "accounts",
    auth: "none",
    refusesApiKeys: true,
    maxBodyBytes: formBodyMaxBytes,
    handler: async (ctx: RouteContext<Body, unknown>) => {
      const grant = await open(ctx.body, clientAddress(ctx, config));
      setSessionCookies(ctx, grant, config.sessionTtlSeconds);
      return json(status, grant);
    },
  } as const;
}

/** The client's address: the last entry of the configured proxy header, else the socket peer. */
function clientAddress(ctx: RouteContext<unknown, unknown>, config: TenancyConfig): string {
  const forwarded = config.clientAddressHeader ? ctx.headers[config.clientAddressHeader] : undefined;
  const last = forwarded?.split(",").pop()?.trim().slice(0, 100);
  return last || ctx.remoteAddress;
}

export function authRoutes(accounts: AccountService, config: TenancyConfig) {
  return [
    defineRoute({
      method: "post",
      path: "/v1/auth/signup",
      summary: "Create an account with its organization, default project and environments",
      ...opensSession(201, config, (body: z.output<typeof signupBody>, address) => accounts.signup(body, address)),
      body: signupBody,
      responses: {
        201: z.object({
          user: userSchema,
          organization: organizationSchema,
          project: projectSchema,
          environments: z.array(environmentWithKeySchema),
          ...sessionGrantSchema.shape,
        }),
      },
      errors: ["conflict", "forbidden", "rate_limited"],
    }),
    defineRoute({
      method: "post",
      path: "/v1/auth/login",
      summary: "Log in: returns a session token and sets the session cookie",
      ...opensSession(200, config, (body: z.output<typeof loginBody>, address) => accounts.sessions.login(body, address)),
      body: loginBody,
      responses: { 200: z.object({ user: userSchema, ...sessionGrantSchema.shape }) },
      errors: ["unauthorized", "rate_limited"],
    }),
    defineRoute({
      method: "post",
      path: "/v1/auth/logout",
      summary: "End the current session",
      tag: "accounts",
      auth: "session",
      maxBodyBytes: formBodyMaxBytes,
      responses: { 204: null },
      handler: async (ctx) => {
        await accounts.sessions.logout(ctx.auth.tokenHash);
        ctx.setCookie({ name: sessionCookie, value: "", maxAgeSeconds: 0, httpOnly: true });
        ctx.setCookie({ name: csrfCookie, value: "", maxAgeSeconds: 0, httpOnly: false });
        return json(204);
      },
    }),
  ];
}
