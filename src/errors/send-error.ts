// Writes an Error body on a response: the one rendering of every refusal the gateway makes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyStillArriving } from '../http/framing.ts';
import type { GatewayError } from './gateway-error.ts';

/** Renders the interface's Error body as application/json, with the error's own headers. */
export function sendError(res: ServerResponse, error: GatewayError): void {
  const payload = JSON.stringify(error.toBody());
  res.statusCode = error.status;
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  res.end(payload);
}

/** What a refusal writes its Error into: the request record (its `error`, which the access line, metrics and span read). */
export interface RefusalRecord {
  error?: GatewayError;
}

/**
 * The one path of an Error the gateway writes after the pipeline handed the request on (the proxy's relay): the record gets the
 * error first, so the access line, the metric and the span read the same code as the client got.
 */
export function sendRefusal(res: ServerResponse, record: RefusalRecord | undefined, error: GatewayError): void {
  if (record !== undefined) record.error = error;
  sendError(res, error);
}

/**
 * Answers with a refusal, closing the connection while the body is still to arrive: else the gateway reads and discards it for as
 * long as it comes, and a client that never got 100 Continue may send its next request where the body would be.
 */
export function refuse(req: IncomingMessage, res: ServerResponse, error: GatewayError): void {
  if (bodyStillArriving(req)) res.setHeader('Connection', 'close');
  sendError(res, error);
}
