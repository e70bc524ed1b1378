// openapi-fetch answers {data} or {error}: these turn that into data or a
// thrown TroupeError, so callers write `await unwrap(client.api.GET(...))`.
import { ConnectionError, errorFromResponse, TroupeError } from "./errors.ts";

export type ApiResult<D> = { data?: D; error?: unknown; response: Response };

/** The data of an openapi-fetch call, or its error as a TroupeError (thrown). */
export async function unwrap<D>(call: Promise<ApiResult<D>>): Promise<D> {
  let result: ApiResult<D>;
  try {
    result = await call;
  } catch (error) {
    if (error instanceof TroupeError || (error instanceof Error && error.name === "AbortError")) throw error;
    throw new ConnectionError({ status: 0, code: "connection_error", message: error instanceof Error ? error.message : String(error) });
  }
  if (!result.response.ok) throw errorFromResponse(result.response, result.error);
  return result.data as D;
}

/** Like unwrap, with the response (its headers: X-Request-Id, X-RateLimit-*). */
export async function unwrapWithResponse<D>(call: Promise<ApiResult<D>>): Promise<{ data: D; response: Response }> {
  let response: Response | undefined;
  const data = await unwrap(call.then((result) => ((response = result.response), result)));
  return { data, response: response as Response };
}

