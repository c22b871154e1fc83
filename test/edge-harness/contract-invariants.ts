// Invariant f: the gateway's check of the backend's answers against the document, per mode, seen from the client and the upstream.
//
// What each answer should be is known from how its upstream behaviour was generated (UpstreamBehaviour.contract), never from
// the gateway's checker. enforce: an answer off the document never reaches the client (a 502 upstream_contract_violation, or
// another gateway Error when the upstream failed as well), one on it is relayed as written; report and off: every answer is
// relayed as written (status, media type, body). Refusals keep the client's connection; a head refused closes the upstream's.
// A slow body (UpstreamBehaviour.trickleMs) shows whether the gateway holds a success answer: under off and report its first
// part reaches the client before the upstream writes the rest; under enforce, when its body is checked, never.
import type { ClientOutcome } from './client-driver.ts';
import { closesConnection, isErrorBody } from './client-invariants.ts';
import { answerContent } from './contract-bodies.ts';
import { afterStray, describe, mismatched, reach, stallsIn, upstreamPlaces } from './answer-facts.ts';
import type { UpstreamConnection } from './hostile-upstream.ts';
import { parseReceived, type ReceivedResponse } from './response-parser.ts';
import { type ContractMode, type EdgeCase, PLAIN_ANSWER, type SentRequest, type UpstreamBehaviour } from './script.ts';
import type { RestWritten } from './sightings.ts';
import type { Violation } from './violations.ts';

/** The code of the gateway's Error when it refuses an answer that breaks the document. */
const CONTRACT_REFUSAL = 'upstream_contract_violation';
/** The code of the Error bodies the hostile upstream writes itself. */
const BACKEND_CODE = 'backend_says_no';

function errorCode(response: ReceivedResponse): string | undefined {
  if (!isErrorBody(response)) return undefined;
  return (JSON.parse(response.body) as { code: string }).code;
}

const snippet = (response: ReceivedResponse) => `${response.status} ${JSON.stringify(response.body.slice(0, 120))}`;

export function checkContract(
  edgeCase: EdgeCase,
  clients: readonly ClientOutcome[],
  connections: readonly UpstreamConnection[],
  rests: ReadonlyMap<string, RestWritten>,
): Violation[] {
  const mode = edgeCase.gateway.contractMode;
  // A fixture from before the gateway checked answers: its gateway samples production's default share under report, so nothing is known per answer.
  if (mode === undefined) return [];
  const violations: Violation[] = [];
  const places = upstreamPlaces(connections);
  const { timeoutMs } = edgeCase.gateway;
  const stalls = stallsIn(edgeCase);

  edgeCase.clients.forEach((script, client) => {
    const outcome = clients[client]!;
    const flag = (detail: string) => violations.push({ invariant: 'f', client, detail: `${mode}: ${detail}` });
    const whole = script.requests.filter((request) => request.end <= outcome.written);
    const stream = parseReceived(outcome.received, (i) => script.requests[i]?.method === 'HEAD', outcome.end !== 'done');
    stream.responses.forEach((response, i) => {
      const request = whole[i];
      if (request === undefined || !places.has(request.tag)) return;
      const behaviour = edgeCase.upstream[request.tag] ?? PLAIN_ANSWER;
      // Refused as made for another request (its id, or a stray read in its place): invariant d's, not the contract's.
      if (mismatched(edgeCase, behaviour) || afterStray(edgeCase, places, request.tag)) return;
      const context = { mode, behaviour, request, response, stalls, reach: reach(behaviour, timeoutMs) };
      const problem = mode === 'enforce' && behaviour.contract !== 'on' ? offContractRelayed(context) : notAsWritten(context);
      if (problem !== undefined) flag(`the answer to ${request.tag} (${describe(behaviour)}) ${problem}`);
      const timing = slowBodyTiming(context, i, rests.get(request.tag));
      if (timing !== undefined) flag(`the slow body of ${request.tag} (${describe(behaviour)}) ${timing}`);
      // A refusal that closes the client's connection (its last request may ask for that itself).
      const last = request === script.requests.at(-1);
      if (errorCode(response) === CONTRACT_REFUSAL && closesConnection(response) && !last)
        flag(`the ${CONTRACT_REFUSAL} refusal of ${request.tag} closes the client's connection`);
    });
    // A refusal followed by the gateway's close, with requests still owed an answer.
    const answered = stream.responses.filter((response) => response.complete);
    const lastAnswer = answered.at(-1);
    if (outcome.end === 'server-closed' && lastAnswer !== undefined && errorCode(lastAnswer) === CONTRACT_REFUSAL && answered.length < whole.length)
      flag(
        `the gateway closed the client's connection after refusing ${whole[answered.length - 1]!.tag}, ${whole.length - answered.length} request(s) unanswered`,
      );
  });

  // A head refused at once aborts the upstream's connection: nothing else may be asked on it.
  if (mode === 'enforce') {
    for (const [tag, place] of places) {
      const behaviour = edgeCase.upstream[tag];
      if (behaviour?.contract === 'off-head' && reach(behaviour, timeoutMs).head && place.followed)
        violations.push({ invariant: 'f', detail: `enforce: upstream connection ${place.connection} was reused after ${tag}'s head broke the document` });
    }
  }
  return violations;
}

interface AnswerContext {
  mode: ContractMode;
  behaviour: UpstreamBehaviour;
  request: SentRequest;
  response: ReceivedResponse;
  stalls: boolean;
  reach: { head: boolean; body: boolean };
}

/** enforce, an answer off the document: never relayed, not a byte of it; a 502 upstream_contract_violation once the gateway could check it. */
function offContractRelayed({ behaviour, request, response, stalls, reach }: AnswerContext): string | undefined {
  const bodiless = request.method === 'HEAD';
  if (!response.complete) return response.status === 502 || response.status === 504 ? undefined : `began to be relayed: ${snippet(response)}`;
  const code = errorCode(response);
  const gatewayError = bodiless ? response.status >= 502 && response.status <= 504 : code !== undefined && code !== BACKEND_CODE && response.status >= 502;
  if (!gatewayError) return `was relayed: ${snippet(response)}`;
  // Checkable: its head (off-head) or its whole body (off-body) reached the gateway, and nothing in the case could time it out first.
  const checkable = behaviour.contract === 'off-head' ? reach.head : reach.body;
  if (!checkable || stalls) return undefined;
  if (response.status !== 502 || (!bodiless && code !== CONTRACT_REFUSAL)) return `is not the 502 ${CONTRACT_REFUSAL}: ${snippet(response)}`;
  return undefined;
}

/** Relayed as the upstream wrote it (off and report always, enforce when on the document): its status, media type and body. */
function notAsWritten({ mode, behaviour, request, response, stalls, reach }: AnswerContext): string | undefined {
  // Only answers the gateway can have whole, truly framed, with nothing in the case to time them out.
  if (!reach.body || stalls || !response.complete || behaviour.lie !== 'none') return undefined;
  if (mode === 'enforce' && behaviour.contract !== 'on') return undefined;
  if (response.status !== behaviour.status) return `is ${snippet(response)}, not the upstream's ${behaviour.status}`;
  if (request.method === 'HEAD' || behaviour.status === 204 || behaviour.status === 304) return undefined;
  const written = answerContent(behaviour.status, request.method, request.target, request.tag, behaviour);
  // An error answer that is no Error the gateway wraps into its own: only an Error-shaped one is relayed as written.
  if (behaviour.status >= 400 && behaviour.contract !== 'on') return undefined;
  if (response.body !== written.body)
    return `has body ${JSON.stringify(response.body.slice(0, 120))}, not the upstream's ${JSON.stringify(written.body.slice(0, 120))}`;
  const type = response.headers['content-type'];
  if (type !== written.contentType) return `says Content-Type ${type ?? '(none)'}, not the upstream's ${written.contentType}`;
  return undefined;
}

/**
 * A slow success body's first part against the rest: streamed (off, report) or held (enforce, when its body is checked). `index`
 * is the answer's place on its client connection: only the first can be streamed for sure, nothing ahead of it to wait for.
 */
function slowBodyTiming({ mode, behaviour, request, response }: AnswerContext, index: number, rest: RestWritten | undefined): string | undefined {
  if (rest === undefined || behaviour.trickleMs === undefined) return undefined;
  const bodyRelayed = request.method !== 'HEAD' && behaviour.status < 400 && behaviour.status !== 204 && behaviour.status !== 304;
  if (!bodyRelayed) return undefined;
  if (mode === 'enforce') {
    if (behaviour.contract === 'off-head' || rest === 'cap') return undefined;
    return 'reached the client in part before the upstream had written all of it: enforce relayed it unchecked';
  }
  if (index !== 0 || rest === 'seen' || !response.complete || response.status !== behaviour.status) return undefined;
  return `reached the client only after the upstream had written all of it (its first part waited the whole ${behaviour.trickleMs} ms cap): it was delayed`;
}
