// node:http's values, taken from its CommonJS module object rather than an ESM import.
//
// An ESM import of node:http builds a namespace from every export, which reads the lazy WebSocket,
// CloseEvent and MessageEvent getters Node 22.5+ puts on the module, and so loads Node's bundled undici
// (fetch, WebSocket), which the gateway never uses (what it costs: docs/performance.md, "The request
// path"). The module object leaves those getters unread.
// Types still come from `import type ... from 'node:http'`.
const http = process.getBuiltinModule('node:http');

export const createServer = http.createServer;
export const STATUS_CODES = http.STATUS_CODES;
