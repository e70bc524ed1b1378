// For the tests that read the /v1 OpenAPI document and check the server does
// what it states: an embedded Troupe, its document, and a signed-up user to
// send requests as; stopped when the test file ends.
import { signup, startTestTroupe, type TestTroupe } from "./troupe.ts";

export interface OpenApiFixture {
  troupe: TestTroupe;
  doc: Record<string, unknown>;
  user: Awaited<ReturnType<typeof signup>>;
}

export async function startOpenApiFixture(t: { teardown(fn: () => unknown): void }, label: string): Promise<OpenApiFixture> {
  const troupe = await startTestTroupe();
  t.teardown(() => troupe.stop());
  const doc = (await troupe.request("GET", "/v1/openapi.json")).body as Record<string, unknown>;
  return { troupe, doc, user: await signup(troupe, label) };
}
