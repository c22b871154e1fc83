// The floor: Express 5 and http-proxy-middleware with no features at all, over the same keep-alive pool size.
import { Agent } from 'node:http';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';

const [target = '', port = '0'] = process.argv.slice(2);
const app = express();
app.use(createProxyMiddleware({ target, changeOrigin: true, agent: new Agent({ keepAlive: true, maxSockets: 256 }) }));
const server = app.listen(Number(port), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
