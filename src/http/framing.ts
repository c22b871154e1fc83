// What a request's headers say about its body: read by the stages that decide before the body arrives.

/** Whether the client waits for 100 Continue before sending a body it announced (RFC 9110 §10.1.1; HTTP/1.0 ignores Expect). */
export function expectsContinue(req: { httpVersion: string; headers: { expect?: string | undefined } }): boolean {
  const expect = req.headers.expect;
  return req.httpVersion === '1.1' && expect !== undefined && expect.trim().toLowerCase() === '100-continue';
}

/** Whether the request announces a body (a non-zero Content-Length, or any Transfer-Encoding). */
export function announcesBody(headers: { 'content-length'?: string | undefined; 'transfer-encoding'?: string | undefined }): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** Whether the body is still on the wire: answering now leaves bytes to read and discard for as long as the client sends them. */
export function bodyStillArriving(req: {
  complete: boolean;
  headers: { 'content-length'?: string | undefined; 'transfer-encoding'?: string | undefined };
}): boolean {
  return announcesBody(req.headers) && !req.complete;
}
