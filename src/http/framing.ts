// What a request's headers say about its body: read by the stages that decide before the body arrives.

/** Whether the client waits for 100 Continue before sending a body it announced (RFC 9110 §10.1.1). */
export function expectsContinue(headers: { expect?: string | undefined }): boolean {
  return headers.expect !== undefined && headers.expect.trim().toLowerCase() === '100-continue';
}

/** Whether the request announces a body (a non-zero Content-Length, or any Transfer-Encoding). */
export function announcesBody(headers: { 'content-length'?: string | undefined; 'transfer-encoding'?: string | undefined }): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}
