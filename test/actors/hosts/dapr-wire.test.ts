// What crosses daprd: method errors wrapped in daprd's own error message,
// timer/reminder data as JSON or base64, Go durations.
import t from "tap";
import { TroupeError } from "../../../core/errors.ts";
import { errorFromResponse, errorToWire, goDuration, parseScheduledCall } from "../../../actors/hosts/dapr/wire.ts";

t.test("a TroupeError survives daprd's wrapping", async (t) => {
  const wire = errorToWire(new TroupeError("conflict", "busy", { details: { a: 1 }, retryAfterSeconds: 2 }));
  t.equal(wire.status, 500, "callback answers 500 (daprd drops bodies of some statuses)");
  // What daprd 1.18.3 answered in this repo's cluster (HTTP API, remote or local actor).
  const daprBody = JSON.stringify({
    errorCode: "ERR_ACTOR_INVOKE_METHOD",
    message: `error invoke actor method: rpc error: code = Internal desc = error invoke actor method: error from actor service: (500) ${JSON.stringify(wire.body)}`,
  });
  const error = errorFromResponse(500, daprBody, "call");
  t.ok(error instanceof TroupeError);
  t.match(error, { code: "conflict", status: 409, message: "busy", details: { a: 1 }, retryAfterSeconds: 2 });
});

t.test("a plain Error keeps name and message; daprd's own failures are 503", async (t) => {
  const wire = errorToWire(new RangeError("out of range"));
  const error = errorFromResponse(500, JSON.stringify(wire.body), "call");
  t.notOk(error instanceof TroupeError);
  t.match(error, { name: "RangeError", message: "out of range" });
  const dapr = errorFromResponse(500, JSON.stringify({ errorCode: "ERR_ACTOR_RUNTIME_NOT_FOUND", message: "actor runtime not ready" }), "call X.y");
  t.match(dapr, { code: "service_unavailable", status: 503 });
  t.match(dapr.message, /ERR_ACTOR_RUNTIME_NOT_FOUND/);
  t.match(errorFromResponse(502, "<html>bad gateway</html>", "call"), { code: "service_unavailable" });
});

t.test("scheduled calls parse from JSON data, base64 data, or the timer callback name", async (t) => {
  const data = { method: "mark", input: { x: 1 } };
  t.same(parseScheduledCall(JSON.stringify({ data, dueTime: "1s" })), data);
  t.same(parseScheduledCall(JSON.stringify({ data: Buffer.from(JSON.stringify(data)).toString("base64") })), data);
  t.same(parseScheduledCall(JSON.stringify({ data: { "@type": "bytes", value: Buffer.from(JSON.stringify(data)).toString("base64") } })), data);
  t.same(parseScheduledCall(JSON.stringify({ callback: "tick" })), { method: "tick" });
  t.equal(parseScheduledCall("not json"), undefined);
  t.equal(goDuration(1500), "1500ms");
});
