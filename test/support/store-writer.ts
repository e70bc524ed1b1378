// Child process for the kill -9 test: writes documents one batch at a time
// and prints "ack <i>" only after the store acknowledged each write.
import { systemClock } from "../../core/clock.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: store-writer <dir>");
const store = new EmbeddedDataStore(dir, systemClock);
for (let i = 0; ; i++) {
  await store.apply([{ op: "put", key: `doc:${i}`, value: { i, pad: "x".repeat(100) } }]);
  process.stdout.write(`ack ${i}\n`);
}
