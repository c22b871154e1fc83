// GET /deprecations shows a bounded glance of the report: the first rows of each operation, and the whole count.
import { describe, expect, it } from 'vitest';
import { boundReport } from '../../../src/admin/admin-app.ts';

const row = (operation: string, keyId: string) => ({ operation, keyId });

describe('boundReport', () => {
  it('keeps the first rows of each operation and counts them all', () => {
    const rows = [row('getPet', 'key_a'), row('getPet', 'key_b'), row('getPet', 'key_c'), row('listOld', 'key_a')];
    expect(boundReport(rows, 2)).toEqual({ rows: [rows[0], rows[1], rows[3]], total: 4 });
  });
});
