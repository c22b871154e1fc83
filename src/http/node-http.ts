// node:http's values, taken from its CommonJS module object rather than an ESM import.
//
// An ESM import builds a namespace from every export, reading the lazy WebSocket getters Node 22.5+ puts on the
// module, which loads Node's bundled undici; the module object leaves them unread.
// Types still come from `import type ... from 'node:http'`.
const http = process.getBuiltinModule('node:http');

export const createServer = http.createServer;
export const STATUS_CODES = http.STATUS_CODES;
