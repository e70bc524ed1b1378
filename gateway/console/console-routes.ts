// The console's plain pages (served like /healthz, outside the /v1 OpenAPI):
//   GET /console             the page (static HTML)
//   GET /console/console.js  its script
//   GET /console/data.json   the data, for a session (cookie or bearer) of an owner or admin
import { TroupeError } from "../../core/errors.ts";
import type { Authenticator } from "../authenticate.ts";
import type { PlainPage } from "../server.ts";
import { consoleData, type ConsoleDataDeps } from "./console-data.ts";
import { consoleHtml, consoleScript } from "./console-page.ts";

// The page and its script load nothing from elsewhere; data comes from this origin.
const policy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'";
const orgIdPattern = /^[A-Za-z0-9_-]{1,100}$/;

export function consolePages(authenticator: Authenticator, deps: ConsoleDataDeps): PlainPage[] {
  return [
    {
      path: "/console",
      respond: async () => ({
        status: 200,
        contentType: "text/html; charset=utf-8",
        body: consoleHtml,
        headers: [["content-security-policy", policy], ["cache-control", "no-store"]],
      }),
    },
    { path: "/console/console.js", respond: async () => ({ status: 200, contentType: "text/javascript; charset=utf-8", body: consoleScript }) },
    {
      path: "/console/data.json",
      async respond(req) {
        const auth = await authenticator.authenticate({ auth: "session" }, "GET", req.headers);
        if (auth.kind !== "session") throw new TroupeError("unauthorized", "the console takes a dashboard session");
        const org = new URLSearchParams(req.query).get("org") ?? undefined;
        if (org !== undefined && !orgIdPattern.test(org)) {
          throw new TroupeError("invalid_request", "org must be an organization id", { details: [{ path: "query.org", message: "not an organization id" }] });
        }
        const data = await consoleData(deps, auth.userId, org);
        return { status: 200, contentType: "application/json", body: JSON.stringify(data), headers: [["cache-control", "no-store"]] };
      },
    },
  ];
}
