// The zod building blocks of environment settings, shared by core/config.ts
// and the provider descriptors (providers/<name>/index.ts) whose settings
// config parses with everything else.
import { z } from "zod";

export const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");
export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** Unset or blank (a chart may render an empty value) reads as absent. */
export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim()));
export const commaList = z
  .string()
  .default("")
  .transform((v) =>
    v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  );
