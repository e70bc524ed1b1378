// connectRedis auto-pipelines on a single server: commands issued in one
// event-loop turn reach Redis in one socket write, not one write each
// (tenancy/redis-connection.ts). The cluster client does not: the cluster
// ledger suite fails with it (redis-cluster-ledger-store.test.ts).
import type { Socket } from "node:net";
import t from "tap";
import { connectRedis } from "../../tenancy/redis-connection.ts";
import { startTestRedis } from "../support/redis.ts";

const redis = await startTestRedis();
t.teardown(() => redis.stop());

t.test("100 commands issued in one turn leave in a few socket writes", async (t) => {
  const client = connectRedis({ url: redis.url }, { maxRetriesPerRequest: 2 });
  t.teardown(() => client.disconnect());
  await client.ping();
  const socket = (client as unknown as { stream: Socket }).stream;
  const write = socket.write.bind(socket);
  let writes = 0;
  socket.write = ((...args: Parameters<Socket["write"]>) => {
    writes++;
    return write(...args);
  }) as Socket["write"];
  const key = `troupe-test:pipelined:${Date.now()}`;
  const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => client.hset(key, `f${i}`, String(i))));
  t.same(replies, Array.from({ length: 100 }, () => 1), "every command answered, in order");
  t.ok(writes >= 1 && writes <= 3, `${writes} socket writes for 100 commands (one each without auto-pipelining)`);
  t.equal(await client.hlen(key), 100);
  await client.del(key);
});
