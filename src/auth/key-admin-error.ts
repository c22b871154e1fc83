// Why a key operation was refused, shared by the key cores (admin, listing, rotation); key-admin.ts re-exports it.
import { RefusalError } from '../errors/refusal-error.ts';

/** Why a key operation was refused: the admin API answers each with its own status (src/admin-api/routes.ts). */
export type KeyAdminRefusal = 'invalid' | 'not_found' | 'conflict' | 'damaged' | 'pepper_mismatch';

export class KeyAdminError extends RefusalError<KeyAdminRefusal> {
  override name = 'KeyAdminError';
}
