// The admin API's bearer tokens that tests and benches write to the gateway's token file.

/** Two tokens, as during a rotation: both are accepted. */
export const ADMIN_TOKEN = 'admin-token-a-0123456789abcdefghijklmnop';
export const SECOND_ADMIN_TOKEN = 'admin-token-b-0123456789abcdefghijklmnop';
