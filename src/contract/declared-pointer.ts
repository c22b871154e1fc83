// A pointer's member names as the document declares them: any other name is the backend's data, written `*`.

/** The token a member name the schema does not declare is written as, in a pointer that reaches a log line, metric or report. */
export const UNDECLARED_MEMBER = '*';

/**
 * A member name as a JSON pointer reference token (RFC 6901: `~` and `/` escaped) when the declared schema names it
 * (`memberNames`, src/contract/declared-responses.ts), else `*`: a name nothing declares is the backend's data (a map keyed by
 * e-mail addresses, a customer id as a member name), never the document's, and must not leave the comparison or the check.
 */
export function memberToken(name: string, memberNames: ReadonlySet<string>): string {
  return memberNames.has(name) ? name.replaceAll('~', '~0').replaceAll('/', '~1') : UNDECLARED_MEMBER;
}
