// Requests and responses made with the serving Express app's prototypes from the start.
//
// Express gives each request and response its app's prototypes (`Object.setPrototypeOf` in `app.handle`).
// For an object made with node:http's own prototypes, V8 does that through its slow map-updating path on
// every request; an object that already has the prototype is left as it is. node:http makes a server's
// requests and responses with the classes it is given (its `IncomingMessage` and `ServerResponse`
// options), so these make them with the app's prototypes, and Express's call changes nothing. What it
// saved: docs/decisions/0012-messages-with-the-app-prototypes.md.
import type { Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';

const http = process.getBuiltinModule('node:http');

/** An Express app's `request` and `response` prototypes. */
export interface MessagePrototypes {
  readonly request: object;
  readonly response: object;
}

export interface AppMessages {
  /** For `http.createServer`'s options: requests and responses made with the adopted prototypes. */
  readonly classes: { readonly IncomingMessage: typeof IncomingMessage; readonly ServerResponse: typeof ServerResponse };
  /** Requests arriving from now on are made with these prototypes: those of the app that will serve them. */
  adopt(prototypes: MessagePrototypes): void;
}

export function createAppMessages(): AppMessages {
  // Only their `prototype` is read, as the new.target of node:http's own constructors. node:http's
  // constructors make the object: a constructor of ours would size it by its own body, with no room for
  // node:http's fields inside it, and V8 keeps an object with that many fields outside it as a dictionary.
  const requestTarget = function request() {};
  const responseTarget = function response() {};
  requestTarget.prototype = http.IncomingMessage.prototype as object;
  responseTarget.prototype = http.ServerResponse.prototype as object;
  // `new` on these makes a small object they drop for the one they return.
  function GatewayIncomingMessage(socket: Socket): IncomingMessage {
    return Reflect.construct(http.IncomingMessage, [socket], requestTarget);
  }
  function GatewayServerResponse(req: IncomingMessage, options?: unknown): ServerResponse {
    return Reflect.construct(http.ServerResponse, [req, options], responseTarget);
  }
  return {
    classes: {
      // Called with `new` by node:http; typed as the classes they stand for (their instances are theirs).
      IncomingMessage: GatewayIncomingMessage as unknown as typeof IncomingMessage,
      ServerResponse: GatewayServerResponse as unknown as typeof ServerResponse,
    },
    adopt(prototypes) {
      requestTarget.prototype = prototypes.request;
      responseTarget.prototype = prototypes.response;
    },
  };
}
