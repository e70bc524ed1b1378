// The ledger that makes the Elasticsearch quota exact within a process: a
// count started before an add settled must still see that add's records, a
// count started after must not see them twice, and settled entries are
// dropped once no count that could miss them is in flight.
import t from "tap";
import { ReservationLedger } from "../../vectors/reservation-ledger.ts";
import { loadConfig } from "../../gateway/config.ts";
import { defaultVectorLimits } from "../../vectors/vector-index.ts";

t.test("open reservations count for every read; settled ones only for reads that started before", async (t) => {
  const ledger = new ReservationLedger();
  const early = ledger.beginRead();
  const a = ledger.reserve("org", 3);
  ledger.reserve("other", 5);
  t.equal(ledger.held("org", early), 3, "open: counted");
  ledger.settle(a);
  const late = ledger.beginRead();
  t.equal(ledger.held("org", early), 3, "a count started before it settled may have missed it");
  t.equal(ledger.held("org", late), 0, "a count started after it settled sees it in the store");
  t.equal(ledger.held("other", late), 5, "per organization");
  ledger.endRead(late);
  t.equal(ledger.size, 2, "kept while the early read is in flight");
  ledger.endRead(early);
  t.equal(ledger.size, 1, "dropped once no read could miss it");
  ledger.settle(a);
  t.equal(ledger.size, 1, "settling twice is harmless");
});

t.test("the index defaults of core/config.ts are defaultVectorLimits", async (t) => {
  t.same(loadConfig({}).vectors.limits, defaultVectorLimits);
  t.same(loadConfig({ VECTOR_INDEX_QUOTA_PER_ORG: "7", VECTOR_METADATA_MAX_BYTES: "2048" }).vectors.limits, {
    ...defaultVectorLimits,
    quotaPerOrganization: 7,
    metadataMaxBytes: 2048,
  });
  t.throws(() => loadConfig({ VECTOR_METADATA_MAX_DEPTH: "0" }), /VECTOR_METADATA_MAX_DEPTH/);
});
