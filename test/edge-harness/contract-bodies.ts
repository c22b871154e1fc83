// The bodies the hostile upstream writes, on the interface document or off it in one named way; each carries the request's tag.
import type { OffContractKind, UpstreamBehaviour } from './script.ts';

/** What goes after the head's status line: the media type and any other field the answer's kind calls for, and the body. */
export interface AnswerContent {
  contentType: string;
  /** Whole header lines, CRLF-terminated. */
  fields: string;
  body: string;
}

/** Which statuses a kind can be written on: a body-shape kind needs a body, and the right class of status. */
export function offContractApplies(kind: OffContractKind, status: number): boolean {
  const hasBody = status !== 204 && status !== 304;
  switch (kind) {
    case 'missing-category':
    case 'id-as-string':
    case 'status-outside-enum':
    case 'extra-nesting':
    case 'error-shaped':
      return hasBody && status < 400;
    case 'pet-shaped-error':
    case 'error-status-mismatch':
      return status >= 400;
    case 'html':
    case 'not-json':
      return hasBody;
    case 'no-retry-after':
      return status === 429;
  }
}

/**
 * The pet carrying `tag`, one member changed by `kind`. The padding goes last: a Content-Length that lies short cuts into it,
 * never into the tag.
 */
function pet(tag: string, kind: OffContractKind | undefined): string {
  const id = kind === 'id-as-string' ? '"1"' : '1';
  const category = kind === 'missing-category' ? '' : ',"categoryId":1';
  const status = kind === 'status-outside-enum' ? ',"status":"lost"' : '';
  return `{"id":${id},"name":"${tag}"${category}${status},"pad":"xxxxxxxxxxxxxxxx"}`;
}

const errorBody = (tag: string, status: number) => `{"code":"backend_says_no","message":"${tag}","status":${status}}`;

/**
 * The body of the answer to `method` `target` with `status` (a 204 or 304 has none), as `behaviour` says to write it: a page of
 * pets for listPets, one pet for createPet (POST on the same path) and getPet.
 */
export function answerContent(
  status: number,
  method: string,
  target: string,
  tag: string,
  behaviour: Pick<UpstreamBehaviour, 'offContract' | 'plainErrorBody'>,
): AnswerContent {
  const kind = behaviour.offContract;
  const fields = status === 429 && kind !== 'no-retry-after' ? 'Retry-After: 1\r\n' : '';
  // Bodiless, yet labelled as the harness always did (fixtures replay the same bytes): the media type of a body not sent goes unchecked.
  if (status === 204 || status === 304) return { contentType: 'application/json', fields, body: '' };
  if (kind === 'html') return { contentType: 'text/html', fields, body: `<p>${tag}</p>` };
  if (kind === 'not-json') return { contentType: 'application/json', fields, body: `<p>${tag}</p>` };
  const list = method !== 'POST' && target.split('?')[0] === '/v1/pets';
  if (status >= 400) {
    if (kind === 'pet-shaped-error') return { contentType: 'application/json', fields, body: pet(tag, undefined) };
    // The Error of another status: 400's, or 404's when the answer is a 400.
    if (kind === 'error-status-mismatch') return { contentType: 'application/json', fields, body: errorBody(tag, status === 400 ? 404 : 400) };
    if (behaviour.plainErrorBody) return { contentType: 'text/plain', fields, body: `backend trouble for ${tag}` };
    return { contentType: 'application/json', fields, body: errorBody(tag, status) };
  }
  if (kind === 'error-shaped') return { contentType: 'application/json', fields, body: errorBody(tag, status) };
  const one = pet(tag, kind);
  if (kind === 'extra-nesting') return { contentType: 'application/json', fields, body: list ? `{"pets":[${one}]}` : `{"pet":${one}}` };
  return { contentType: 'application/json', fields, body: list ? `[${one}]` : one };
}
