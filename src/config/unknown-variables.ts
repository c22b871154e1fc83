// Environment variables that look like the gateway's but name no setting (GATEWAY_ENVIROMENT): faults naming the closest known name.
import leven from 'leven';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The prefixes of the gateway's variables, derived from the names it knows: for each first word, the words every
 * name starting with it shares before its last word (API_KEY_, RATE_LIMIT_, UPSTREAM_); a first word only one
 * name has is the prefix alone (LOG_, CORS_). A name without a second word (PORT) gives none.
 */
export function prefixesOf(known: readonly string[]): string[] {
  const byFirstWord = new Map<string, string[][]>();
  for (const name of known) {
    const words = name.split('_');
    if (words.length < 2) continue;
    byFirstWord.set(words[0]!, [...(byFirstWord.get(words[0]!) ?? []), words.slice(0, -1)]);
  }
  return [...byFirstWord.values()].map((heads) => {
    if (heads.length === 1) return `${heads[0]![0]}_`;
    const shared: string[] = [];
    for (const [i, word] of heads[0]!.entries()) {
      if (!heads.every((head) => head[i] === word)) break;
      shared.push(word);
    }
    return `${shared.join('_')}_`;
  });
}

/**
 * What Kubernetes (service links: REDIS_SERVICE_HOST, REDIS_PORT=tcp://…) and Docker links put in a container's
 * environment for a Service or container named like a prefix (redis, gateway): not the operator's, never a fault.
 */
function linkVariable(name: string, value: string): boolean {
  if (/_SERVICE_(HOST|PORT(_[A-Z0-9_]+)?)$/.test(name) || /_PORT_\d+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?$/.test(name)) return true;
  return /_PORT$/.test(name) && /^(tcp|udp|sctp):\/\//.test(value);
}

/** The closest of `known` to `name`, by edit distance (ties: the first in `known`'s order). */
export function closestName(name: string, known: readonly string[]): string {
  let best = known[0]!;
  let distance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const d = leven(name, candidate);
    if (d < distance) [best, distance] = [candidate, d];
  }
  return best;
}

/** One fault per variable set with one of the gateway's prefixes that it does not read, sorted by name. */
export function unknownVariableFaults(env: Env, known: readonly string[]): string[] {
  const prefixes = prefixesOf(known);
  const knownSet = new Set(known);
  return Object.keys(env)
    .filter((name) => env[name] !== undefined && !knownSet.has(name) && prefixes.some((prefix) => name.startsWith(prefix)))
    .filter((name) => !linkVariable(name, env[name]!))
    .sort()
    .map((name) => `${name}: not a setting of the gateway (did you mean ${closestName(name, known)}?); docs/configuration.md lists every variable`);
}
