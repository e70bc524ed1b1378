// Preloaded (`node --import`) into a child Troupe by the queued-at-kill test
// (test/gateway/compat/responses-background-queued-kill.test.ts): this
// process queues background responses and never starts them, as if it were
// killed between a response's enqueue and its runner's claim. Only a restart
// without it runs them (the actor's watchdog starts a queued run).
import { BackgroundRunner } from "../../gateway/compat/openai/responses/background.ts";

BackgroundRunner.prototype.start = function start(): void {};
