// A turn's fingerprint is kept in the conversation's state (handled_calls)
// to recognise a repeated delivery: it must not change between releases, or
// a retry that straddles an upgrade would run its turn twice.
import t from "tap";
import { callFingerprint } from "../../actors/conversation/conversation-actor.ts";

t.test("the fingerprint of a call is the one earlier releases stored", async (t) => {
  // Written by the release that hashed the request id, a NUL and the input's JSON in three updates.
  t.equal(callFingerprint("req_01M8ER1PK66N0BZWW5TH6BKXAG", { postMessage: "Hello there, can you say ok please?" }), "SXHnaYUgcZnFVbdw3IMAdV");
  t.not(callFingerprint("req_01M8ER1PK66N0BZWW5TH6BKXAG", { postMessage: "Hello there, can you say ok please!" }), "SXHnaYUgcZnFVbdw3IMAdV");
  t.equal(callFingerprint("", { postMessage: "no request id: nothing to recognise a repeat by" }), undefined);
});
