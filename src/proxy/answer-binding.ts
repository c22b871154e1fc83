// Whether an upstream answer was made for the request it arrives for: the X-Request-Id the gateway sent, echoed (config `upstream.requestIdEcho`).
// A backend that wrote one answer twice, or split one, puts an answer on its connection that the next request would read as its own:
// the id tells them apart where HTTP/1.1's framing cannot.

/** `off`: not looked at; `auto`: another id is refused, and no id once the backend has echoed one; `required`: no id is refused too. */
export type RequestIdEcho = 'off' | 'auto' | 'required';
export const REQUEST_ID_ECHO_MODES: readonly RequestIdEcho[] = ['off', 'auto', 'required'];

/** One upstream's binding: whether an answer without the id is refused (`required`, or `auto` once the backend has echoed one). */
export interface AnswerBinding {
  echoes: boolean;
}

/**
 * One upstream's binding, undefined under `off` (nothing to look at per answer). Under `auto` it learns, from the first answer that
 * echoes its id, that this backend echoes: from then on an answer without one is refused too.
 */
export function createAnswerBinding(mode: RequestIdEcho): AnswerBinding | undefined {
  return mode === 'off' ? undefined : { echoes: mode === 'required' };
}

/**
 * Whether an answer whose X-Request-Id field is `answered` may be the request sent with `sent`: a string compare, and the lesson
 * learnt when it matches. Another id, the field twice (an array), or no id from a backend known to echo: not the request's.
 */
export function boundToRequest(binding: AnswerBinding, sent: string, answered: string | string[] | undefined): boolean {
  if (answered === sent) {
    binding.echoes = true;
    return true;
  }
  return answered === undefined && !binding.echoes;
}
