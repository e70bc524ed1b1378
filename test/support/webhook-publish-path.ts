// Where test/support/webhook-app.ts takes events to publish (kept apart: importing that file starts a Troupe).
export const publishPath = "/v1/test-events/publish";
