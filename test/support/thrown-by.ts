// The TroupeError a synchronous call throws, for tests that assert its code,
// status and message; anything else it throws (or its not throwing) fails
// the test loudly.
import { TroupeError } from "../../core/errors.ts";

export function thrownBy(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (e) {
    if (e instanceof TroupeError) return e;
    throw e;
  }
  throw new Error("expected a TroupeError");
}
