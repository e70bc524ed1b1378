// The composition limiter: never more than its slots at once, FIFO, and a
// failing piece of work frees its slot.
import t from "tap";
import { createLimiter } from "../../actors/job/compose-limit.ts";

t.test("at most N at once, in arrival order, failures free their slot", async (t) => {
  const limit = createLimiter(2);
  let running = 0;
  let most = 0;
  const started: number[] = [];
  const work = (i: number) =>
    limit(async () => {
      started.push(i);
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running -= 1;
      if (i === 1) throw new Error("boom");
      return i;
    });
  const results = await Promise.allSettled([0, 1, 2, 3, 4].map(work));
  t.equal(most, 2, "two at once");
  t.same(started, [0, 1, 2, 3, 4], "first come, first served");
  t.same(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"]);
  t.equal(await limit(async () => "free"), "free", "every slot came back");
});
