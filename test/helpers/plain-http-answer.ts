// The one answer a plain HTTP request to the TLS port gets in the clear, byte for byte (nginx: "plain HTTP request was sent to HTTPS port").
export const PLAIN_HTTP_ANSWER =
  'HTTP/1.1 400 invalid request\r\n' +
  'Content-Type: application/json; charset=utf-8\r\n' +
  'Content-Length: 113\r\n' +
  'Connection: close\r\n\r\n' +
  '{"code":"invalid_request","message":"A plain HTTP request was sent to the HTTPS port: use https://","status":400}';
