// The services an Activation needs when a test drives one turn by hand, with
// nothing behind them: a call, timer or reminder the turn was not expected to
// use rejects, so a test learns of it. Override what the test does use.
import { randomIds, type ActorServices } from "../../actors/hosts/activation.ts";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";

export const unused = (): Promise<never> => Promise.reject(new Error("not used"));

export function offlineActorServices(overrides: Partial<ActorServices> = {}): ActorServices {
  return {
    clock: systemClock,
    ids: randomIds,
    log: createLogger("silent"),
    call: unused,
    setTimer: unused,
    clearTimer: unused,
    setReminder: unused,
    clearReminder: unused,
    ...overrides,
  };
}
