// A caller-given URL (webhook url, audio_url, image_url) refused by the outbound guard: the 400 said
// "resolves to a non-public address (10.x.y.z)", telling whoever asked what
// an internal name resolves to. Over real sockets, with a name that resolves
// to loopback in real DNS (localhost) and no OUTBOUND_ALLOW_HOSTS: the
// refusal says what kind of address, never which.
import t from "tap";
import { field, signup, startTestTroupe } from "../support/troupe.ts";

const troupe = await startTestTroupe({ OUTBOUND_ALLOW_HOSTS: "" });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "guard");

t.test("webhook URL, audio_url and image_url naming an internal host: 400 without the DNS answer", async (t) => {
  const cases = [
    ["/v1/webhooks", { url: "https://localhost:8443/hook", events: ["job.completed"] }],
    ["/v1/audio/transcriptions", { audio_url: "https://localhost:8443/a.wav", model: "simulated-transcribe" }],
    ["/v1/video/generate", { image_url: "https://localhost:8443/a.png", prompt: "a cat", model: "simulated-video" }],
  ] as const;
  for (const [path, body] of cases) {
    const res = await troupe.request("POST", path, { token: user.testKey, body });
    t.equal(res.status, 400, `${path}: ${res.text}`);
    t.equal(field(res.body, "error", "code"), "invalid_request");
    t.match(res.text, /localhost resolves to a non-public address/, path);
    t.notMatch(res.text, /127\.0\.0\.1|::1\b|::ffff/, `${path}: no resolved address in ${res.text}`);
  }
});
