// Whether an upstream answer was made for the request it arrives for: the X-Request-Id the gateway sent, echoed (config `upstream.requestIdEcho`).
// A backend that wrote one answer twice, or split one, puts an answer on its connection that the next request would read as its own:
// the id tells them apart where HTTP/1.1's framing cannot.

/** `off`: not looked at; `auto`: another id is refused, and no id once the backend has echoed one; `required`: no id is refused too. */
export type RequestIdEcho = 'off' | 'auto' | 'required';
export const REQUEST_ID_ECHO_MODES: readonly RequestIdEcho[] = ['off', 'auto', 'required'];

/** Given the id sent and the answer's X-Request-Id field: true when the answer may be the request's. */
export type AnswerBinding = (sent: string, answered: string | string[] | undefined) => boolean;

/**
 * One upstream's binding, undefined under `off` (nothing to run per answer). Under `auto` it learns, from the first answer that echoes
 * its id, that this backend echoes: from then on an answer without one is refused too. A string compare per answer.
 */
export function createAnswerBinding(mode: RequestIdEcho): AnswerBinding | undefined {
  if (mode === 'off') return undefined;
  let echoes = mode === 'required';
  return function bound(sent, answered) {
    if (answered === sent) {
      echoes = true;
      return true;
    }
    // Another id, the field twice (an array), or no id from a backend known to echo.
    return answered === undefined && !echoes;
  };
}
