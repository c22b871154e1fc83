// Generates whole harness cases: gateway settings, two or three clients with their own keys, and the upstream's answer to each request.
import fc from 'fast-check';
import type { TransportName } from '../helpers/edge-transport.ts';
import { clientSpec, tlsClientSpec, toClientScript, type ClientSpec } from './client-generators.ts';
import { LIST_PETS_DECLARED } from './documents.ts';
import type { EdgeCase, GatewaySettings, SentRequest, UpstreamBehaviour } from './script.ts';
import { behaviourSpec, toBehaviour } from './upstream-generators.ts';

const settings: fc.Arbitrary<GatewaySettings> = fc.record({
  // One or two pooled connections: requests of different clients share them.
  maxSockets: fc.integer({ min: 1, max: 2 }),
  timeoutMs: fc.constantFrom(300, 400, 500),
  totalTimeoutMs: fc.constant(1500),
  // Off first: shrinking moves towards a gateway that checks nothing, so a counterexample that needs checking says so.
  contractMode: fc.constantFrom('off' as const, 'report' as const, 'enforce' as const),
  // One case in three serves listPets without `default`: the statuses it leaves out are then undeclared.
  document: fc.oneof({ weight: 2, arbitrary: fc.constant('v1' as const) }, { weight: 1, arbitrary: fc.constant('listPets-without-default' as const) }),
  // The harness's upstream echoes X-Request-Id but where a behaviour says otherwise: every answer without the right one is refused.
  requestIdEcho: fc.constant('required' as const),
  // Every request shadowed (the tap beside each relay, hostile answers included), to a staging that refuses connections.
  shadow: fc.boolean(),
});

/**
 * Under enforce, `default` covers error statuses only (contractResponses.defaultCovers unset): the proxied operations declare their
 * own success status (200, 201) and `default`, so a 204 or 304 is undeclared there.
 */
const DECLARED_UNDER_ENFORCE: ReadonlySet<number> = new Set([200, 201, ...Array.from({ length: 200 }, (_, at) => 400 + at)]);

/** Whether `request` is a listPets one (HEAD is served as GET): under the variant document, its statuses but a few are undeclared. */
const isListPets = (request: SentRequest) => (request.method === 'GET' || request.method === 'HEAD') && request.target.split('?')[0] === '/v1/pets';

/** Cases of clients from `clients`: plain ones for TCP, TLS ones (hostile to TLS itself at times) for TLS. */
const casesOf = (clients: fc.Arbitrary<ClientSpec>): fc.Arbitrary<EdgeCase> =>
  fc
    .record({
      gateway: settings,
      clients: fc.array(fc.tuple(clients, fc.array(behaviourSpec, { minLength: 4, maxLength: 4 })), { minLength: 2, maxLength: 3 }),
    })
    .map(({ gateway, clients }) => {
      const scripts = clients.map(([spec], index) => toClientScript(spec, index));
      const upstream: Record<string, UpstreamBehaviour> = {};
      for (const [c, script] of scripts.entries()) {
        for (const [r, request] of script.requests.entries()) {
          const declared =
            gateway.document === 'listPets-without-default' && isListPets(request)
              ? LIST_PETS_DECLARED
              : gateway.contractMode === 'enforce'
                ? DECLARED_UNDER_ENFORCE
                : undefined;
          upstream[request.tag] = toBehaviour(clients[c]![1][r]!, request.method, gateway.timeoutMs, declared);
        }
      }
      return { gateway, clients: scripts, upstream };
    });

export const edgeCase: fc.Arbitrary<EdgeCase> = casesOf(clientSpec);
export const tlsEdgeCase: fc.Arbitrary<EdgeCase> = casesOf(tlsClientSpec);

export const edgeCaseOver = (transport: TransportName): fc.Arbitrary<EdgeCase> => (transport === 'tls' ? tlsEdgeCase : edgeCase);
