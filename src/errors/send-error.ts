// Writes an Error body on a response; shared by the error handler and the proxy's failure path.
import type { ServerResponse } from 'node:http';
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
