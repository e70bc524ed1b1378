// What crosses the wire between Troupe and daprd, parsed with zod: method
// errors (a TroupeError survives the trip through daprd with its code,
// status, message and details), timer/reminder payloads, metadata, and Go
// duration strings.
import { z } from "zod";
import { errorCatalog, TroupeError, type ErrorCode } from "../../../core/errors.ts";

const errorCodes = Object.keys(errorCatalog) as [ErrorCode, ...ErrorCode[]];

/** The body the callback server answers with when a method throws. */
export const wireError = z.object({
  troupeError: z.object({
    code: z.enum(errorCodes).optional(),
    name: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
    retryAfterSeconds: z.number().optional(),
  }),
});
export type WireError = z.infer<typeof wireError>;

/**
 * The callback answers every method error with 500: daprd treats some
 * statuses specially (404 becomes its own "actor method not found" and drops
 * the body), and the real status travels inside the body anyway.
 */
export function errorToWire(error: unknown): { status: number; body: WireError } {
  if (error instanceof TroupeError) {
    return {
      status: 500,
      body: {
        troupeError: {
          code: error.code,
          name: error.name,
          message: error.message,
          details: error.details,
          ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
        },
      },
    };
  }
  const name = error instanceof Error ? error.name : "Error";
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: { troupeError: { name, message } } };
}

/** daprd's own error body ({errorCode, message}). */
const daprError = z.object({ errorCode: z.string().optional(), message: z.string().optional() });

/**
 * daprd could not deliver an actor call: after its own retries, the address
 * placement names for the actor still refused it ("failed to invoke target
 * <address> after 5 retries": unavailable, the actor moved, or placement
 * disseminating; dapr pkg/actors/router). Not a method's error: those carry
 * their serialized error in the message instead.
 */
export function isUndeliveredActorCall(status: number, bodyText: string): boolean {
  if (status !== 500) return false;
  const dapr = daprError.safeParse(safeJson(bodyText));
  return dapr.success && dapr.data.errorCode === "ERR_ACTOR_INVOKE_METHOD" && (dapr.data.message ?? "").startsWith("error invoke actor method: failed to invoke target ");
}

/**
 * Rebuilds the error a call through daprd failed with. daprd does not pass
 * the app's error body through as is: it wraps it in its own error message
 * ("error from actor service: (500) {…}"), so the method's serialized error
 * is found inside that text. Anything else is Dapr failing, a 503.
 */
export function errorFromResponse(status: number, bodyText: string, what: string): Error {
  const parsed = safeJson(bodyText);
  const dapr = daprError.safeParse(parsed);
  const own = wireError.safeParse(parsed).data ?? embeddedWireError(dapr.success ? (dapr.data.message ?? "") : bodyText);
  if (own) {
    const e = own.troupeError;
    if (e.code) {
      return new TroupeError(e.code, e.message, {
        details: e.details,
        ...(e.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: e.retryAfterSeconds }),
      });
    }
    const plain = new Error(e.message);
    plain.name = e.name;
    return plain;
  }
  const detail = dapr.success ? `${dapr.data.errorCode ?? "error"}: ${dapr.data.message ?? ""}` : bodyText.slice(0, 500);
  return new TroupeError("service_unavailable", `Dapr ${what} failed (HTTP ${status}): ${detail}`, {
    details: { dapr_status: status },
    retryAfterSeconds: 1,
  });
}

const marker = '{"troupeError":';

/** The serialized method error inside a daprd error message, if there is one. */
function embeddedWireError(text: string): WireError | undefined {
  const start = text.indexOf(marker);
  if (start < 0) return undefined;
  // The JSON runs to the last closing brace (daprd may add text after it).
  for (let end = text.lastIndexOf("}"); end > start; end = text.lastIndexOf("}", end - 1)) {
    const candidate = wireError.safeParse(safeJson(text.slice(start, end + 1)));
    if (candidate.success) return candidate.data;
  }
  return undefined;
}

/** What Troupe stores in a timer's or reminder's data: the method to run and its input. */
export const scheduledCall = z.object({ method: z.string(), input: z.unknown().optional() });
export type ScheduledCall = z.infer<typeof scheduledCall>;

/** daprd's body for PUT …/method/timer/{name} and …/method/remind/{name}. */
const scheduleCallback = z.object({ data: z.unknown().optional(), callback: z.string().optional() }).loose();

/**
 * The call a timer or reminder callback asks for. daprd hands `data` back as
 * the JSON it was given, or base64 of it (protobuf bytes through the
 * scheduler): both are accepted.
 */
export function parseScheduledCall(bodyText: string): ScheduledCall | undefined {
  const body = scheduleCallback.safeParse(bodyText ? safeJson(bodyText) : {});
  if (!body.success) return undefined;
  let data: unknown = body.data.data;
  if (typeof data === "string") data = safeJson(data) ?? safeJson(Buffer.from(data, "base64").toString("utf8"));
  if (data && typeof data === "object" && "value" in data && typeof data.value === "string" && !("method" in data)) {
    data = safeJson(Buffer.from(data.value, "base64").toString("utf8"));
  }
  const call = scheduledCall.safeParse(data);
  if (call.success) return call.data;
  return body.data.callback ? { method: body.data.callback } : undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Go duration string (what daprd parses for dueTime, period, actorIdleTimeout). */
export function goDuration(ms: number): string {
  return `${Math.max(0, Math.round(ms))}ms`;
}

/** The part of GET /v1.0/metadata the host reads. */
export const daprMetadata = z
  .object({
    actorRuntime: z
      .object({
        runtimeStatus: z.string().optional(),
        hostReady: z.boolean().optional(),
        placement: z.string().optional(),
        activeActors: z.array(z.object({ type: z.string(), count: z.number().default(0) })).optional(),
      })
      .loose()
      .optional(),
  })
  .loose();
export type DaprMetadata = z.infer<typeof daprMetadata>;
