// An operator's request refused by a core the CLIs and the admin API share (keys, brownouts): why, from a closed union, and a message for the operator.

/** The CLIs print the message (exit 1); the admin API answers each `refusal` with its status (src/admin-api/routes.ts). */
export class RefusalError<Refusal extends string> extends Error {
  readonly refusal: Refusal;

  constructor(refusal: Refusal, message: string) {
    super(message);
    this.refusal = refusal;
  }
}
