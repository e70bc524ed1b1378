// The embedded index's records as LMDB holds them: key [organization, id],
// value below (msgpack), parsed when read back like any other boundary.
import { z } from "zod";
import { SCHEMA_VERSION } from "../core/schema-version.ts";
import type { CheckedRecord } from "./vector-index.ts";

export const storedValueSchema = z.object({
  /** Schema version (core/schema-version.ts); absent in records of releases before versions. */
  s: z.number().optional(),
  content: z.string(),
  metadata: z.string(),
  model: z.string(),
  created_at: z.string(),
  vector: z.custom<Uint8Array>((v) => v instanceof Uint8Array, "expected bytes"),
});
export type StoredValue = z.infer<typeof storedValueSchema>;
export const storedKeySchema = z.tuple([z.string(), z.string()]);

export function toStored(record: CheckedRecord): StoredValue {
  return {
    s: SCHEMA_VERSION,
    content: record.content,
    metadata: JSON.stringify(record.metadata),
    model: record.model,
    created_at: record.created_at,
    vector: new Uint8Array(record.vector.buffer, record.vector.byteOffset, record.vector.byteLength),
  };
}
