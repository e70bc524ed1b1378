// The gateway listens before the actor host and the features start (so the
// public URL is known to everything that starts), and serves /v1 only once
// opened: until then a request gets 503 with Retry-After and /readyz says
// not ready, while /healthz already answers.
import t from "tap";
import { createLogger } from "../../core/log.ts";
import { TroupeError } from "../../core/errors.ts";
import type { Admission, AdmissionPolicy, AuthFor } from "../../gateway/admission.ts";
import type { AuthMode } from "../../gateway/route.ts";
import { createGateway } from "../../gateway/server.ts";
import { probeRoutes } from "../support/probe-routes.ts";

// The route this test calls is public; any other would be refused.
const publicOnly: Admission = {
  admit: <A extends AuthMode>(policy: AdmissionPolicy<A>): AuthFor<A> => {
    if (policy.auth !== "none") throw new TroupeError("unauthorized", "this test gateway serves public routes only");
    return { kind: "none" } as AuthFor<A>;
  },
};

t.test("503 until open(), then served", async (t) => {
  const gateway = createGateway({
    routes: probeRoutes(),
    admission: publicOnly,
    log: createLogger("error"),
    maxBodyBytes: 1024,
    secureCookies: false,
    ready: async () => true,
    openApiInfo: { title: "t", version: "1" },
  });
  const port = await gateway.listen("127.0.0.1", 0);
  t.teardown(() => gateway.shutdown(100));
  const base = `http://127.0.0.1:${port}`;
  const starting = await fetch(`${base}/v1/test-probe/slow?ms=0`);
  t.equal(starting.status, 503, "a request before open() is refused");
  t.equal(starting.headers.get("retry-after"), "1");
  t.match(await starting.text(), /the server is starting/);
  t.equal((await fetch(`${base}/readyz`)).status, 503, "not ready before open()");
  t.equal((await fetch(`${base}/healthz`)).status, 200, "alive while starting");
  gateway.open();
  const served = await fetch(`${base}/v1/test-probe/slow?ms=0`);
  t.equal(served.status, 200, "served once opened");
  t.equal((await fetch(`${base}/readyz`)).status, 200, "ready once opened");
});
