// The TroupeError a synchronous call throws, or a promise rejects with, for
// tests that assert its code, status and message; anything else it throws
// (or its not throwing) fails the test loudly.
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

/** The TroupeError a promise rejects with; its resolving (or no promise at all), or any other rejection, fails the test loudly. */
export async function rejectedWith(promise: Promise<unknown> | undefined): Promise<TroupeError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof TroupeError) return e;
    throw e;
  }
  throw new Error("expected a rejection with a TroupeError");
}
