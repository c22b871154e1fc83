// The shadow report's table: learnt noise printed with its kind, or as any kind when learnt before kinds were kept.
import { expect, it } from 'vitest';
import { shadowReportTable } from '../../../src/cli/shadow-output.ts';

it('prints each learnt noise with its kind, and one learnt without a kind as any kind', () => {
  const at = '2030-03-14T10:00:00.000Z';
  const table = shadowReportTable({
    from: at,
    to: '2030-03-14T11:00:00.000Z',
    operations: [
      {
        operation: 'listPets',
        results: { match: 3, differ: 0, staging_error: 0, staging_off_contract: 0, skipped: 0 },
        comparisons: 3,
        differences: [],
        noise: [],
        learntNoise: [
          { pointer: '/*/*', kind: 'value', sightings: 3, firstSeen: at, lastSeen: at },
          { pointer: '/meta', sightings: 1, firstSeen: at, lastSeen: at },
        ],
        unlisted: 0,
      },
    ],
  });
  expect(table.split('\n').filter((line) => line.includes('learnt as noise'))).toEqual([
    '  learnt as noise: /*/* value (3 sightings), /meta any kind (1 sightings)',
  ]);
});
