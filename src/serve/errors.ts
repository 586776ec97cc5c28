// Errors as the OpenAI API reports them: an HTTP status and
// {"error": {"message", "type", "param", "code"}}.

export type ErrorType = "invalid_request_error" | "authentication_error" | "not_found_error" | "server_error" | "rate_limit_error";

export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: ErrorType = "invalid_request_error",
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const invalid = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError(400, message, "invalid_request_error", param, code);

export const notFound = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError(404, message, "not_found_error", param, code);

/** Fastify's own errors (bad JSON, body too large, schema violations) in the OpenAI shape. */
export function fromFrameworkError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const err = e as { statusCode?: number; code?: string; message?: string; validation?: { instancePath: string; params?: Record<string, unknown>; message?: string }[] };
  if (err.validation && err.validation.length > 0) {
    const v = err.validation[0];
    const missing = typeof v.params?.missingProperty === "string" ? v.params.missingProperty : undefined;
    const unknown = typeof v.params?.additionalProperty === "string" ? v.params.additionalProperty : undefined;
    const param = jsonPointerToParam(v.instancePath, missing ?? unknown);
    const what = param ?? "the request body";
    if (unknown !== undefined) return invalid(`unrecognized request argument: "${param}" (this server does not support it)`, param);
    return invalid(missing ? `missing required parameter: "${param}"` : `invalid value for ${what}: ${v.message ?? "wrong type"}`, param);
  }
  const status = err.statusCode ?? 500;
  if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") return new ApiError(413, "the request body is too large", "invalid_request_error", null, "request_too_large");
  if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return new ApiError(415, "the request body must be JSON (Content-Type: application/json)", "invalid_request_error");
  if (status >= 400 && status < 500) {
    // Fastify's messages for bad JSON are the parser's own words, e.g. "Unexpected token } in JSON".
    const message = err.code?.startsWith("FST_ERR_CTP") || e instanceof SyntaxError
      ? `the request body is not valid JSON: ${err.message}` : err.message ?? "bad request";
    return new ApiError(status, message, "invalid_request_error");
  }
  return new ApiError(500, `internal error: ${err.message ?? String(e)}`, "server_error");
}

/** "/messages/0/content" → "messages[0].content" */
function jsonPointerToParam(pointer: string, child?: string): string | null {
  const parts = pointer.split("/").filter((p) => p !== "");
  if (child) parts.push(child);
  if (parts.length === 0) return null;
  return parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join("");
}
